"""The two small protocols through which programs and benchmarks plug into nlgrad, and their data types.

A *benchmark* yields tasks and scores outputs (static) or episodes (interactive, with an environment).
A *program* runs one task with a :class:`~nlgrad.runtime.context.RunContext` and returns an output.
A *policy source* gives the text injected into a module's prompt for a route (policy memory implements it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, runtime_checkable

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


def distinct_tasks(tasks: list[Task], source: str) -> list[Task]:
    """``tasks`` without repeats of an identical task (a sampler may repeat one; it runs once). Two *different*
    tasks with one id raise :class:`~nlgrad.errors.BenchmarkError` naming ``source`` (a benchmark id) and the id:
    results, trace files and resume are keyed by the id, so one would silently overwrite the other."""
    from nlgrad.errors import BenchmarkError

    first: dict[str, tuple[int, Task]] = {}
    for number, task in enumerate(tasks, 1):
        if task.id not in first:
            first[task.id] = (number, task)
        elif first[task.id][1] != task:
            raise BenchmarkError(f"{source}: the task id {task.id!r} names two different tasks (tasks "
                                 f"{first[task.id][0]} and {number} of the list); each task needs its own id, since "
                                 "results, traces and resume are keyed by it")
    return [task for _, task in first.values()]


class MetricResult(BaseModel):
    """A score in [0, 1], a success flag, and what went wrong in words (critics read ``feedback``).

    ``details["tags"]``, where a metric gives it, is a list of stable failure tags (``missed:punctuation:no_comma``,
    ``answer:sentence_not_span``): learners group failures of one kind by them."""

    score: float = Field(ge=0.0, le=1.0)
    success: bool
    feedback: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


class ObservationInfo(TypedDict, total=False):
    """What an environment may say about an observation besides its text and valid actions (every key optional).

    Environments report what the game says, and nothing derived from the task: no ranking, no hidden actions, no
    settled choices. Programs decide what to make of it. The keys below are the ones programs read; an environment
    may add keys of its own that only its benchmark's metric reads (ScienceWorld ``raw_score``; tau2's
    ``conversation``, ``db_changes``)."""

    task: str  # the task's text, as the game states it
    state_key: str  # a key that is equal exactly when the game state is (programs remember what was tried there)
    look: str  # the game's description of where the agent stands (TWX/ScienceWorld ``look``)
    inventory: str  # the game's inventory text
    message: str  # the game's reply to the last action, where the observation text adds more to it
    free_text_verbs: list[str]  # verbs the environment parses in free text, beyond the listed actions
    n_valid: int  # how many valid actions the game listed, where ``valid_actions`` holds fewer (a bound)
    # tool-using conversations (tau2)
    domain: str  # the service domain, e.g. "retail"
    policy: str  # the domain policy the agent must follow (the benchmark's text, not nlgrad's policy memory)
    tools: list[str]  # the tools' signatures, one line each
    tool_names: list[str]  # the names a tool call may use
    errors: list[str]  # the episode's failed tool calls and unreadable replies so far
    ended_by: str | None  # what ended the conversation (None while it goes on)
    done: bool  # the conversation is over


@dataclass
class Observation:
    text: str
    valid_actions: list[str] = field(default_factory=list)
    info: ObservationInfo = field(default_factory=ObservationInfo)


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


@dataclass(frozen=True)
class BenchmarkHints:
    """The optional attributes a benchmark may declare, each with the default that means "no hint".

    Read them with ``BenchmarkHints.of(benchmark)``, not with ``getattr`` at the read site. A benchmark declares a hint
    as a class attribute, an instance attribute or a property of the same name."""

    human_policy: Path | None = None  # a hand-written policy file (the ``human`` baseline, ``eval --policy human``)
    default_step_cap: int | None = None  # the step cap of a run that names none (interactive benchmarks)
    optimize_defaults: Mapping[str, Any] | None = None  # optimize settings that refine the benchmark kind's defaults
    default_agent: str | None = None  # the model that plays the agent unless the settings or --lm name one

    @classmethod
    def of(cls, benchmark: object) -> "BenchmarkHints":
        """The hints ``benchmark`` declares (None, or an object that declares none, gets every default)."""
        return cls(**{f.name: getattr(benchmark, f.name, f.default) for f in fields(cls)})

    def step_cap(self, requested: int | None) -> int | None:
        """The step cap of a run: ``requested`` where given (not 0), else the benchmark's default (None: no cap)."""
        return requested or self.default_step_cap


def step_cap_for(benchmark: object, requested: int | None) -> int | None:
    """``BenchmarkHints.of(benchmark).step_cap(requested)``: the one step-cap fallback of every command."""
    return BenchmarkHints.of(benchmark).step_cap(requested)


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

    A source that selects entries per input implements :class:`SelectingPolicySource` as well."""

    def render(self, route: str) -> str: ...


@runtime_checkable
class SelectingPolicySource(PolicySource, Protocol):
    """A policy source that shows each module call only the entries that concern its input (conditional lessons,
    :mod:`nlgrad.policy.relevance`); the call's trace node records which ones it saw. Policy memory and its view
    (:class:`nlgrad.policy.view.PolicyView`) implement this."""

    def render_shown(self, route: str, for_input: str) -> tuple[str, list[str]]:
        """The route's policy text for a call whose input text is ``for_input``, and the ids of the entries that
        text shows, in the order shown (one selection serves both)."""
        ...


class EmptyPolicy:
    """No policy: every route gets an empty slot."""

    def render(self, route: str) -> str:  # noqa: ARG002 - protocol signature
        return ""
