"""The two small protocols through which programs and benchmarks plug into nlgrad, and their data types.

A *benchmark* yields tasks and scores outputs (static) or episodes (interactive, with an environment).
A *program* runs one task with a :class:`~nlgrad.runtime.context.RunContext` and returns an output.
A *policy source* gives the text injected into a module's prompt for a route (policy memory implements it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from nlgrad.runtime.context import RunContext

Split = Literal["train", "dev", "test"]
SPLITS: tuple[str, ...] = ("train", "dev", "test")


@dataclass(frozen=True)
class Task:
    """One unit of work. ``inputs`` are what the program sees; ``gold`` is only for the metric."""

    id: str
    split: str
    inputs: dict[str, Any] = field(default_factory=dict)
    gold: Any = None
    seed: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


class MetricResult(BaseModel):
    """A score in [0, 1], a success flag, and what went wrong in words (critics read ``feedback``).

    ``details["tags"]``, where a metric gives it, is a list of stable failure tags (``missed:punctuation:no_comma``,
    ``answer:sentence_not_span``): learners group failures of one kind by them."""

    score: float = Field(ge=0.0, le=1.0)
    success: bool
    feedback: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


@dataclass
class Observation:
    text: str
    valid_actions: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepResult:
    observation: Observation
    reward: float = 0.0
    done: bool = False
    score: float = 0.0
    success: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    """An interactive environment. ``reset`` starts the episode of ``task`` (seeded); ``step`` plays one action."""

    def reset(self, task: Task) -> Observation: ...

    def step(self, action: str) -> StepResult: ...

    def close(self) -> None: ...


@dataclass
class Episode:
    """What happened in an interactive task: filled in by the run context as the program steps the environment."""

    steps: int = 0
    done: bool = False
    success: bool = False
    score: float = 0.0
    first_observation: Observation | None = None
    last_observation: Observation | None = None
    actions: list[str] = field(default_factory=list)
    stopped_by_cap: bool = False


@runtime_checkable
class Benchmark(Protocol):
    """A named benchmark. ``kind`` is "static" (metric over outputs) or "interactive" (metric over episodes)."""

    id: str
    kind: str
    default_program: str

    def tasks(self, split: str, n: int | None = None) -> list[Task]: ...

    def metric(self, task: Task, output: Any, episode: Episode | None = None) -> MetricResult: ...


@runtime_checkable
class InteractiveBenchmark(Benchmark, Protocol):
    def make_env(self) -> Environment: ...


@runtime_checkable
class Program(Protocol):
    """A program composes modules, tools and env steps in plain Python; ``routes`` lists its module routes."""

    name: str

    @property
    def routes(self) -> list[str]: ...

    def run(self, task: Task, ctx: "RunContext") -> Any: ...


@runtime_checkable
class PolicySource(Protocol):
    """Gives the policy text for a route ("" when there is none). Policy memory implements this.

    A source may also implement ``shown_entries(route, for_input) -> list`` (items with an ``id``) and accept
    ``render(route, for_input=TEXT)``: then each module call is shown only the entries that concern its input
    (conditional lessons, :mod:`nlgrad.policy.relevance`) and its trace node records their ids."""

    def render(self, route: str) -> str: ...


class EmptyPolicy:
    """No policy: every route gets an empty slot."""

    def render(self, route: str) -> str:  # noqa: ARG002 - protocol signature
        return ""
