"""TIGPO: a persistent transition graph per task, exploration and revisit slots, and a revisit group paired with its
earlier exploration group as an enlarged reference (pure Python, no torch).

Graph-based credit usually builds its graph from one step's rollouts and forgets it. TIGPO keeps, for every task,
the :class:`~nlgrad.trainer.transition_graph.TransitionGraph` of every transition its episodes made, by every policy
version (:class:`TaskHistory`), and a step's task slots are split between *exploration* (the seeded sampler's draw)
and *revisits* (delayed reattempts of tasks explored before, :func:`revisit_tasks`).

For a group of task ``k`` (G episodes of this step, ``states[i]`` the environment states episode i went through):

1. its transitions join ``k``'s graph (reward on a transition: the episode's outcome on its last environment step);
2. *step credit from the graph*: a turn that acted at environment step ``j`` of episode i, whose action moved the
   environment from ``u = states[i][j]`` to ``s = states[i][j + 1]``, gets ``S(i, t) = Q(u -> s) - V(u)`` over the
   whole graph (``gamma`` per step; see ``transition_graph``), so transitions found by earlier policies decide, with
   the current ones, what a step was worth (0 for a turn whose action was never played);
3. *episode credit against a reference*: an exploration group is its own reference (GRPO); a revisit group is
   normalized against the **enlarged reference** of its own returns and the returns of the task's latest earlier
   exploration group: ``A(i) = (R_i - mean(R ∪ R_explore)) / (std(R ∪ R_explore) + eps)`` (``"mean"``: without the
   std), computed for the current episodes only. A revisit that now wins where the exploration group failed gets a
   positive advantage even when its own group is flat;
4. ``A(i, t) = A(i) + omega * S(i, t)``. An exploration group's returns become the task's exploration record.

The history is detached: historical transitions and scores are references only; only the current turns are trained.
It is JSON-serializable (:meth:`TaskHistory.to_dict`) and saved in every checkpoint. Without environment states (a
program without an environment) a group adds no transitions and its step credit is 0.
"""

from __future__ import annotations

import math
import random
from typing import Any, Sequence

from nlgrad.trainer.advantages import EPS, Normalize, group_normalize
from nlgrad.trainer.transition_graph import TransitionGraph


class TaskHistory:
    """Per task: its transition graph and the returns of its latest exploration group (with the step)."""

    def __init__(self, graphs: dict[str, TransitionGraph] | None = None,
                 explorations: dict[str, dict[str, Any]] | None = None):
        self.graphs: dict[str, TransitionGraph] = dict(graphs or {})
        self.explorations: dict[str, dict[str, Any]] = dict(explorations or {})

    def graph(self, task_id: str) -> TransitionGraph:
        return self.graphs.setdefault(task_id, TransitionGraph())

    def record_exploration(self, task_id: str, step: int, returns: Sequence[float]) -> None:
        self.explorations[task_id] = {"step": int(step), "returns": [float(r) for r in returns]}

    def exploration_returns(self, task_id: str) -> list[float] | None:
        entry = self.explorations.get(task_id)
        return list(entry["returns"]) if entry else None

    def tasks(self) -> list[str]:
        """Tasks with an exploration group: the ones a revisit may draw."""
        return sorted(self.explorations)

    def to_dict(self) -> dict[str, Any]:
        return {"graphs": {k: g.to_list() for k, g in sorted(self.graphs.items())},
                "explorations": dict(sorted(self.explorations.items()))}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "TaskHistory":
        """The saved history (a checkpoint written before the graph, with only anchor statistics: empty)."""
        data = data or {}
        return cls({k: TransitionGraph(edges) for k, edges in (data.get("graphs") or {}).items()},
                   {k: dict(v) for k, v in (data.get("explorations") or {}).items()})


def enlarged_reference_advantages(returns: Sequence[float], reference: Sequence[float],
                                  normalize: Normalize = "mean", eps: float = EPS) -> list[float]:
    """``returns`` normalized against the pool ``returns + reference`` (the reference itself gets no advantage)."""
    pooled = group_normalize([*returns, *reference], normalize, eps)
    return pooled[:len(returns)]


def graph_step_credit(graph: TransitionGraph, states: Sequence[Sequence[str]], turn_steps: Sequence[Sequence[int]],
                      gamma: float) -> list[list[float]]:
    """``Q(u -> s) - V(u)`` of the transition each turn's environment step made (0 when it made none)."""
    values = graph.values(gamma)
    out = []
    for episode_states, steps in zip(states, turn_steps):
        row = []
        for j in steps:
            if 0 <= j and j + 1 < len(episode_states):
                u, s = str(episode_states[j]), str(episode_states[j + 1])
                row.append(graph.q_value(u, s, values, gamma) - values.get(u, 0.0))
            else:
                row.append(0.0)
        out.append(row)
    return out


def tigpo_advantages(task_id: str, history: TaskHistory, scores: Sequence[float], states: Sequence[Sequence[str]],
                     step_rewards: Sequence[Sequence[float]], turn_steps: Sequence[Sequence[int]], *,
                     revisit: bool = False, step: int = 0, omega: float = 1.0, gamma: float = 0.95,
                     normalize: Normalize = "mean", eps: float = EPS) -> list[list[float]]:
    """Per-turn TIGPO advantages of one group of ``task_id`` (see the module docstring); updates ``history``."""
    if not (len(scores) == len(states) == len(step_rewards) == len(turn_steps)):
        raise ValueError("one entry per episode is needed")
    graph = history.graph(task_id)
    for episode_states, rewards in zip(states, step_rewards):
        graph.add_episode(episode_states, rewards)
    reference = history.exploration_returns(task_id) if revisit else None
    if reference:
        episode = enlarged_reference_advantages(scores, reference, normalize, eps)
    else:
        episode = group_normalize(scores, normalize, eps)
        history.record_exploration(task_id, step, scores)
    credit = graph_step_credit(graph, states, turn_steps, gamma)
    return [[episode[i] + omega * c for c in credit[i]] for i in range(len(scores))]


def revisit_tasks(history: TaskHistory, fresh_ids: Sequence[str], slots: int, *, seed: int, step: int) -> list[str]:
    """Ids of up to ``slots`` explored tasks to revisit at ``step`` (not among ``fresh_ids``), a seeded draw."""
    candidates = [t for t in history.tasks() if t not in set(fresh_ids)]
    if slots <= 0 or not candidates:
        return []
    rng = random.Random(f"tigpo:{seed}:{step}")
    return rng.sample(candidates, min(slots, len(candidates)))


def revisit_slots(share: float, tasks_per_step: int) -> int:
    """``floor(share * tasks_per_step)``, leaving at least one exploration slot when ``tasks_per_step > 1``."""
    slots = int(math.floor(share * tasks_per_step + 1e-9))
    return min(slots, tasks_per_step - 1) if tasks_per_step > 1 else 0
