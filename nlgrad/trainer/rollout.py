"""Multi-turn rollouts: nlgrad's own program runs each episode, with the learner model sampling every module call.

The trainer does not re-implement the agent loop. It runs the benchmark's program through
:meth:`Executor.run_task` (same templates, same action matching and loop breaker, same environment and metric), with
:class:`~nlgrad.trainer.hf_lm.LearnerLM` in sample mode as the LM. Each episode's sampled turns are aligned with the
trace's module nodes, which give each turn its route, the environment step it acted at and its *anchor* (its route
and the environment state it acted in, for GiGPO), and the evidence that tools revealed right after it (for CIGPO).
The environment states come from :mod:`nlgrad.trainer.env_states` (the environment's own ``state_key``), one per
environment node of the trace; they are the states an episode visited (for ProGPO).
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import Observation, Task
from nlgrad.runtime.trace import Trace
from nlgrad.trainer.env_states import StateLog, state_key_of
from nlgrad.trainer.hf_lm import LearnerLM, SampledTurn
from nlgrad.trainer.trace_uses import CallUses, call_uses


@dataclass
class Turn:
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    route: str = ""
    anchor: str = ""
    evidence: str = ""  # what tools returned after this turn and before the next one
    env_step: int = 0  # environment steps played before this turn (its turn index without an environment)
    advantage: float = 0.0
    entropy: float | None = None  # mean sampling entropy of its tokens (STAPO), recorded at rollout time
    uses_supported: int = 0  # env steps / tool calls that used its output and succeeded (IAPO; trace_uses)
    uses_failed: int = 0  # ... and that failed
    next_observation: str | None = None  # observation of the first env step that used it (TAPO)
    guided: bool = False  # sampled under a plan hint, trained under the unguided prompt (ActGuide-RL)


@dataclass
class EpisodeRollout:
    task: Task
    index: int  # position in its group (0..G-1)
    turns: list[Turn]
    score: float
    success: bool
    steps: int = 0
    error: str | None = None
    observations: list[str] = field(default_factory=list)  # state keys: reset, then after every step
    info_gains: list[float] = field(default_factory=list)
    guided: bool = False  # an ActGuide-RL re-roll under a plan hint

    @property
    def horizon(self) -> int:
        """Discount positions of the episode: its environment steps (its turns without an environment)."""
        return max(len(self.observations) - 1, 0) if self.observations else len(self.turns)

    @property
    def tokens(self) -> int:
        return sum(len(t.prompt_ids) + len(t.completion_ids) for t in self.turns)


def _key(*parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def anchor_of(node: dict[str, Any]) -> str:
    """The anchor of a module call made outside any environment: its route and rendered prompt."""
    messages = node.get("messages") or []
    return _key(node.get("route", ""), messages[-1]["content"] if messages else "")


def evidence_text(result: Any, limit: int = 2000) -> str:
    """A tool result as text: passages as "title: text" lines, anything else as JSON."""
    if isinstance(result, list) and all(isinstance(r, dict) for r in result):
        lines = [f"{r.get('title', '')}: {r.get('text', '')}".strip(": ") for r in result]
        return "\n".join(lines)[:limit]
    if isinstance(result, str):
        return result[:limit]
    return json.dumps(result, ensure_ascii=False, default=str)[:limit]


def episode_states(trace: Trace, states: list[str]) -> list[str]:
    """The state key of every environment node of the trace, in order: the recorded ``states`` when there is one
    per node, else each node's observation text and valid actions (an environment without a recorder)."""
    env = trace.nodes(kind="env")
    if len(states) == len(env):
        return list(states)
    return [state_key_of(Observation(text=n.get("observation", ""), valid_actions=n.get("valid_actions") or []))
            for n in env]


def align_turns(sampled: list[SampledTurn], trace: Trace, states: list[str] | None = None) -> list[Turn]:
    """Pair the sampled turns with the trace's module nodes (same order); attach route, environment step, anchor,
    evidence, sampling entropy, and the call's uses (``trace_uses``: supported / failed uses, next observation). With an environment, a turn's anchor is its route plus the state it acted in (the state after the
    latest environment node before it); without one, its route plus its rendered prompt."""
    calls = trace.module_calls()
    tools = trace.nodes(kind="tool")
    env_orders = [n["order"] for n in trace.nodes(kind="env")]
    states = episode_states(trace, states or [])
    uses = call_uses(trace, states)
    turns = []
    for i, (sample, node) in enumerate(zip(sampled, calls)):
        upper = calls[i + 1]["order"] if i + 1 < len(calls) else float("inf")
        revealed = [evidence_text(t.get("result")) for t in tools
                    if node["order"] < t["order"] < upper and t.get("result") is not None]
        seen = sum(order < node["order"] for order in env_orders)  # env nodes before the call: reset + steps
        route = node.get("route", "")
        if seen:
            env_step, anchor = seen - 1, _key(route, states[seen - 1])
        else:
            env_step, anchor = i, anchor_of(node)
        used = uses.get(node["id"], CallUses())
        turns.append(Turn(prompt_ids=sample.prompt_ids, completion_ids=sample.completion_ids, text=sample.text,
                          route=route, anchor=anchor, evidence="\n".join(revealed), env_step=env_step,
                          entropy=sample.entropy, uses_supported=used.supported, uses_failed=used.failed,
                          next_observation=used.next_observation, guided=sample.guided))
    return turns


def run_episode(executor: Executor, lm: LearnerLM, task: Task, index: int,
                state_log: StateLog | None = None) -> EpisodeRollout:
    lm.take_turns()  # drop anything left from an aborted episode in this thread
    if state_log is not None:
        state_log.begin()
    result, trace = executor.run_task(task)
    states = episode_states(trace, state_log.states() if state_log is not None else [])
    turns = align_turns(lm.take_turns(), trace, states)
    return EpisodeRollout(task=task, index=index, turns=turns, score=float(result.score), success=bool(result.success),
                          steps=result.steps, error=result.error, observations=states)


def collect_groups(executor: Executor, lm: LearnerLM, tasks: list[Task], group_size: int, workers: int = 1,
                   state_log: StateLog | None = None) -> list[list[EpisodeRollout]]:
    """G episodes of every task (same seed), grouped by task; ``workers`` threads run episodes in parallel.
    ``state_log``: the log the executor's environments record state keys into (see ``env_states``)."""
    jobs = [(task, g) for task in tasks for g in range(group_size)]
    if workers <= 1:
        done = [run_episode(executor, lm, task, g, state_log) for task, g in jobs]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nlgrad-train") as pool:
            done = list(pool.map(lambda job: run_episode(executor, lm, *job, state_log), jobs))
    return [done[i * group_size:(i + 1) * group_size] for i in range(len(tasks))]
