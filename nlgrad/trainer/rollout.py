"""Multi-turn rollouts: nlgrad's own program runs each episode, with the policy sampling every module call.

The trainer does not re-implement the agent loop. It runs the benchmark's program through
:meth:`Executor.run_task` (same templates, same action matching and loop breaker, same environment and metric), with
:class:`~nlgrad.trainer.hf_lm.PolicyLM` in sample mode as the LM. Each episode's sampled turns are aligned with the
trace's module nodes, which give each turn its route, its *anchor* (the observation it acted on, for GiGPO) and the
evidence that tools revealed right after it (for CIGPO); the environment nodes give the observations visited (for
ProGPO's coverage).
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.trace import Trace
from nlgrad.trainer.hf_lm import PolicyLM, SampledTurn


@dataclass
class Turn:
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    route: str = ""
    anchor: str = ""
    evidence: str = ""  # what tools returned after this turn and before the next one
    advantage: float = 0.0


@dataclass
class EpisodeRollout:
    task: Task
    index: int  # position in its group (0..G-1)
    turns: list[Turn]
    score: float
    success: bool
    steps: int = 0
    error: str | None = None
    observations: list[str] = field(default_factory=list)  # observation keys: reset, then after every step
    info_gains: list[float] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(len(t.prompt_ids) + len(t.completion_ids) for t in self.turns)


def _key(*parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def observation_key(text: str, actions: list[str] | None = None) -> str:
    """What makes two observations "the same state": the text (whitespace-normalized) and the valid actions."""
    return _key(" ".join(str(text).split()), sorted(actions or []))


def anchor_of(node: dict[str, Any]) -> str:
    """A module call's anchor: the observation it acted on (interactive), else its route and rendered prompt."""
    inputs = node.get("inputs") or {}
    if "observation" in inputs:
        actions = [a.get("text", a) if isinstance(a, dict) else a for a in inputs.get("actions") or []]
        return observation_key(inputs["observation"], [str(a) for a in actions])
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


def align_turns(sampled: list[SampledTurn], trace: Trace) -> list[Turn]:
    """Pair the sampled turns with the trace's module nodes (same order); attach route, anchor and evidence."""
    calls = trace.module_calls()
    tools = trace.nodes(kind="tool")
    turns = []
    for i, (sample, node) in enumerate(zip(sampled, calls)):
        upper = calls[i + 1]["order"] if i + 1 < len(calls) else float("inf")
        revealed = [evidence_text(t.get("result")) for t in tools
                    if node["order"] < t["order"] < upper and t.get("result") is not None]
        turns.append(Turn(prompt_ids=sample.prompt_ids, completion_ids=sample.completion_ids, text=sample.text,
                          route=node.get("route", ""), anchor=anchor_of(node), evidence="\n".join(revealed)))
    return turns


def visited_observations(trace: Trace, turns: list[Turn]) -> list[str]:
    """Observation keys in visiting order: from the environment nodes, else the turns' anchors."""
    env = trace.nodes(kind="env")
    if env:
        return [observation_key(n.get("observation", ""), n.get("valid_actions") or []) for n in env]
    return [t.anchor for t in turns]


def run_episode(executor: Executor, lm: PolicyLM, task: Task, index: int) -> EpisodeRollout:
    lm.take_turns()  # drop anything left from an aborted episode in this thread
    result, trace = executor.run_task(task)
    turns = align_turns(lm.take_turns(), trace)
    return EpisodeRollout(task=task, index=index, turns=turns, score=float(result.score), success=bool(result.success),
                          steps=result.steps, error=result.error, observations=visited_observations(trace, turns))


def collect_groups(executor: Executor, lm: PolicyLM, tasks: list[Task], group_size: int,
                   workers: int = 1) -> list[list[EpisodeRollout]]:
    """G episodes of every task (same seed), grouped by task; ``workers`` threads run episodes in parallel."""
    jobs = [(task, g) for task in tasks for g in range(group_size)]
    if workers <= 1:
        done = [run_episode(executor, lm, task, g) for task, g in jobs]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nlgrad-train") as pool:
            done = list(pool.map(lambda job: run_episode(executor, lm, *job), jobs))
    return [done[i * group_size:(i + 1) * group_size] for i in range(len(tasks))]
