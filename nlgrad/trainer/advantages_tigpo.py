"""TIGPO: anchor statistics kept per task across optimization steps, and task revisits (pure Python, no torch).

GiGPO compares a turn's step return only with the turns of the *same group* that acted in the same anchor (route +
environment state); an anchor visited once in a group gets no step signal. TIGPO keeps, for every task, running
statistics of the step returns observed at each anchor over *all* steps that trained on the task
(:class:`TaskAnchorStats`: count, sum and sum of squares per ``(task, anchor)``), and a share of each step's task
slots revisits tasks trained on before, so those statistics grow.

For a group of task ``k`` at a step, the group's ``(anchor, step return)`` pairs are first added to the statistics;
then, with ``n, mu, sigma`` the count, mean and population std of the returns recorded at ``(k, anchor(i, t))``:

``A(i, t) = A_grpo(i) + omega * S(i, t)``, ``S = R(i, t) - mu`` (``normalize="mean"``) or
``(R(i, t) - mu) / (sigma + eps)`` (``"std"``; 0 when ``sigma <= eps``), and ``S = 0`` when ``n < 2``.

``R(i, t)`` is GiGPO's step return (the outcome on the last environment step, discounted by ``gamma`` per step).
The statistics are JSON-serializable (:meth:`TaskAnchorStats.to_dict`) and are saved in every checkpoint, so a
resumed run continues with them. Revisits (:func:`revisit_tasks`): ``floor(share * tasks_per_step)`` slots, drawn
uniformly (seeded by ``seed`` and the step) from tasks already in the statistics that the step's fresh draw does
not contain.
"""

from __future__ import annotations

import math
import random
from typing import Any, Sequence

from nlgrad.trainer.advantages import EPS, Normalize, group_normalize


class TaskAnchorStats:
    """``{task_id: {anchor: [count, sum, sum_of_squares]}}`` of step returns, kept across steps."""

    def __init__(self, data: dict[str, dict[str, list[float]]] | None = None):
        self.data: dict[str, dict[str, list[float]]] = {k: {a: list(v) for a, v in anchors.items()}
                                                        for k, anchors in (data or {}).items()}

    def add(self, task_id: str, anchor: str, value: float) -> None:
        entry = self.data.setdefault(task_id, {}).setdefault(anchor, [0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += float(value)
        entry[2] += float(value) ** 2

    def moments(self, task_id: str, anchor: str) -> tuple[int, float, float]:
        """``(count, mean, population std)`` of the returns recorded at ``(task_id, anchor)``."""
        count, total, squares = self.data.get(task_id, {}).get(anchor, [0, 0.0, 0.0])
        if not count:
            return 0, 0.0, 0.0
        mean = total / count
        return int(count), mean, math.sqrt(max(squares / count - mean * mean, 0.0))

    def tasks(self) -> list[str]:
        return sorted(self.data)

    def to_dict(self) -> dict[str, Any]:
        return {"anchors": self.data}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "TaskAnchorStats":
        return cls((data or {}).get("anchors"))


def tigpo_advantages(task_id: str, stats: TaskAnchorStats, scores: Sequence[float], anchors: Sequence[Sequence[str]],
                     step_returns: Sequence[Sequence[float]], *, omega: float = 1.0, normalize: Normalize = "mean",
                     eps: float = EPS) -> list[list[float]]:
    """Per-turn TIGPO advantages of one group of ``task_id``; adds the group's returns to ``stats`` first."""
    if not (len(scores) == len(anchors) == len(step_returns)):
        raise ValueError("one anchor list and one return list per episode is needed")
    for episode_anchors, returns in zip(anchors, step_returns):
        if len(episode_anchors) != len(returns):
            raise ValueError("one step return per turn is needed")
        for anchor, value in zip(episode_anchors, returns):
            stats.add(task_id, anchor, value)
    episode = group_normalize(scores, normalize, eps)
    out = []
    for i, (episode_anchors, returns) in enumerate(zip(anchors, step_returns)):
        row = []
        for anchor, value in zip(episode_anchors, returns):
            count, mean, std = stats.moments(task_id, anchor)
            if count < 2:
                step = 0.0
            elif normalize == "mean":
                step = value - mean
            else:
                step = 0.0 if std <= eps else (value - mean) / (std + eps)
            row.append(episode[i] + omega * step)
        out.append(row)
    return out


def revisit_tasks(stats: TaskAnchorStats, fresh_ids: Sequence[str], slots: int, *, seed: int, step: int) -> list[str]:
    """Ids of up to ``slots`` earlier tasks to revisit at ``step`` (not among ``fresh_ids``), seeded, sorted draw."""
    candidates = [t for t in stats.tasks() if t not in set(fresh_ids)]
    if slots <= 0 or not candidates:
        return []
    rng = random.Random(f"tigpo:{seed}:{step}")
    return rng.sample(candidates, min(slots, len(candidates)))


def revisit_slots(share: float, tasks_per_step: int) -> int:
    """``floor(share * tasks_per_step)``, leaving at least one fresh task when ``tasks_per_step > 1``."""
    slots = int(math.floor(share * tasks_per_step + 1e-9))
    return min(slots, tasks_per_step - 1) if tasks_per_step > 1 else 0
