"""RunContext: what a program uses to call modules, tools and the environment while the trace is recorded.

Values returned by :meth:`RunContext.call`, :meth:`tool` and :meth:`env_step` are :class:`Output` objects that
remember their trace node. Passing an ``Output`` (or a list of them) as an input to a later call records a data edge
automatically; ``after=`` adds dependencies that are not inputs (e.g. the previous step of an episode).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from nlgrad.errors import StepCapReached, TaskTimeout
from nlgrad.lm.client import LM
from nlgrad.redact import redact
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import (EmptyPolicy, Environment, Episode, Observation, PolicySource,
                                     SelectingPolicySource, StepResult, Task)
from nlgrad.runtime.trace import Trace


@dataclass(frozen=True)
class Output:
    value: Any
    node: str

    def __str__(self) -> str:
        return str(self.value)


def _unwrap(value: Any, parents: list[str]) -> Any:
    if isinstance(value, Output):
        parents.append(value.node)
        return value.value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Output) for v in value):
        return type(value)(_unwrap(v, parents) for v in value)
    return value


def _nodes(after: Output | str | Iterable[Output | str] | None) -> list[str]:
    if after is None:
        return []
    if isinstance(after, (Output, str)):
        after = [after]
    return [a.node if isinstance(a, Output) else a for a in after]


class RunContext:
    def __init__(self, *, task: Task, lm: LM, trace: Trace, policy: PolicySource | None = None,
                 env: Environment | None = None, step_cap: int | None = None, deadline: float | None = None):
        self.task = task
        self.lm = lm
        self.trace = trace
        self.policy = policy or EmptyPolicy()
        self.env = env
        self.step_cap = step_cap
        self.deadline = deadline
        self.episode = Episode() if env is not None else None
        self.input = Output(task.inputs, trace.add_node("input", "task", inputs=task.inputs, task_id=task.id))

    # ---- modules ------------------------------------------------------------------------------------------------
    def call(self, module: Module, *, after=None, history: list[dict[str, str]] | None = None,
             sample_index: int = 0, temperature: float | None = None, **inputs: Any) -> Output:
        """Render ``module`` with ``inputs`` and its route's policy, call its role's LM, parse and record."""
        self._check_deadline()
        parents = _nodes(after)
        values = {name: _unwrap(value, parents) for name, value in inputs.items()}
        if not parents:
            parents = [self.input.node]
        policy_text, shown, demos = self._policy_for(module.route, values)
        messages = module.render(policy_text, values, history, getattr(self.policy, "placement", "system"), demos)
        node = self.trace.add_node("module", module.route, parents=parents, role=module.role,
                                   model=self.lm.model_for(module.role), policy=policy_text,
                                   policy_entries=shown, inputs=values,
                                   messages=messages, sample_index=sample_index,
                                   step=self.episode.steps if self.episode else None)
        start = time.monotonic()
        try:
            constrained = module.response_format() if self.lm.constrains_json(module.role) else None
            completion = self.lm.complete(module.role, messages, sample_index=sample_index,
                                          temperature=module.temperature if temperature is None else temperature,
                                          max_tokens=module.max_tokens, stop=module.stop, deadline=self.deadline,
                                          **({"response_format": constrained} if constrained else {}))
        except Exception as exc:
            self.trace.update_node(node, error=redact(f"{type(exc).__name__}: {exc}"), latency_s=time.monotonic() - start)
            raise
        self.trace.update_node(node, output=completion.text, prompt_tokens=completion.prompt_tokens,
                               completion_tokens=completion.completion_tokens, cost_usd=completion.cost_usd,
                               cached=completion.cached, retries=completion.retries,
                               latency_s=time.monotonic() - start)
        try:
            parsed = module.parse(completion.text, values)
        except Exception as exc:
            self.trace.update_node(node, error=redact(f"parse error: {type(exc).__name__}: {exc}"))
            raise
        self.trace.update_node(node, parsed=parsed)
        return Output(parsed, node)

    def _policy_for(self, route: str, values: dict[str, Any]
                    ) -> tuple[str, list[str] | None, list[tuple[str, str]] | None]:
        """The route's policy text for a call with these inputs, the ids of the entries it shows (None when the
        source cannot tell: it renders the route whole), and the worked examples a source shows as prior turns
        (``render_call``, the ``demos`` placement of a policy view), all from one selection."""
        if not isinstance(self.policy, SelectingPolicySource):
            return self.policy.render(route), None, None
        if hasattr(self.policy, "render_call"):
            return self.policy.render_call(route, _input_text(values))
        return (*self.policy.render_shown(route, _input_text(values)), None)

    # ---- tools --------------------------------------------------------------------------------------------------
    def tool(self, name: str, fn: Callable[..., Any], *, after=None, **args: Any) -> Output:
        """Call a plain Python tool and record it (arguments, result or error) as a node."""
        self._check_deadline()
        parents = _nodes(after)
        values = {k: _unwrap(v, parents) for k, v in args.items()}
        node = self.trace.add_node("tool", name, parents=parents or [self.input.node], args=values)
        start = time.monotonic()
        try:
            result = fn(**values)
        except Exception as exc:
            self.trace.update_node(node, error=redact(f"{type(exc).__name__}: {exc}"), latency_s=time.monotonic() - start)
            raise
        self.trace.update_node(node, result=result, latency_s=time.monotonic() - start)
        return Output(result, node)

    # ---- environment --------------------------------------------------------------------------------------------
    def env_reset(self) -> Output:
        if self.env is None or self.episode is None:
            raise RuntimeError("this task has no environment (static benchmark)")
        obs = self.env.reset(self.task)
        self.episode.first_observation = self.episode.last_observation = obs
        node = self.trace.add_node("env", "env.reset", parents=[self.input.node], observation=obs.text,
                                   valid_actions=obs.valid_actions, step=0)
        return Output(obs, node)

    def env_step(self, action: str | Output, *, after=None) -> Output:
        if self.env is None or self.episode is None:
            raise RuntimeError("this task has no environment (static benchmark)")
        self._check_deadline()
        if self.episode.done:
            raise RuntimeError("the episode is over; no more steps")
        if self.step_cap is not None and self.episode.steps >= self.step_cap:
            self.episode.stopped_by_cap = True
            raise StepCapReached(f"step cap {self.step_cap} reached")
        parents = _nodes(after)
        action_text = _unwrap(action, parents)
        result: StepResult = self.env.step(str(action_text))
        ep = self.episode
        ep.steps += 1
        ep.actions.append(str(action_text))
        ep.last_observation = result.observation
        ep.done, ep.success, ep.score = result.done, result.success, result.score
        node = self.trace.add_node("env", "env.step", parents=parents or [self.input.node], action=action_text,
                                   observation=result.observation.text, valid_actions=result.observation.valid_actions,
                                   reward=result.reward, score=result.score, done=result.done,
                                   success=result.success, step=ep.steps)
        return Output(result, node)

    @property
    def steps_left(self) -> int | None:
        if self.step_cap is None or self.episode is None:
            return None
        return self.step_cap - self.episode.steps

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TaskTimeout(f"task {self.task.id} ran past its time limit")


__all__ = ["RunContext", "Output", "Observation"]


def _input_text(values: dict[str, Any]) -> str:
    """A module call's input as the one text conditions are matched against."""
    return "\n".join(str(v) for v in values.values())
