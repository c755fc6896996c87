"""STAPO: turns whose normalized entropy is an outlier in their state get a trajectory-independent penalty plus a
trajectory-aware reward (pure Python, no torch).

Each turn's entropy is recorded at rollout time (:meth:`LearnerModel.sample` keeps the mean, over the sampled tokens, of
the entropy ``-sum p log p`` of the temperature-scaled distribution each token was drawn from). Raw entropy mixes how
hard a state is with how sure the agent is, so STAPO *normalizes* it against the agent's own behaviour in the same
state: the *anchor group* is GiGPO's (the turns of the group's episodes that acted with the same route in the same
environment state; route + rendered prompt without an environment), and within an anchor group of ``n >= 2`` turns
with entropies ``H``:

``z(i, t) = (H(i, t) - mean(H)) / std(H)`` (population std; no outliers when ``std <= eps``)

A turn with ``|z| > z_threshold`` is an *outlier step*: it acted far more (or far less) randomly than the agent does in
that state, the signature of trajectory neglect (losing track of the goal and the history). The hierarchy: the
episode group gives the trajectory signal, the anchor group the step's normalized entropy.

Ordinary turns keep GRPO's episode advantage. An outlier turn is optimized by the joint mechanism:

``A(i, t) = reward_coef * A_grpo(i) - penalty``

- *trajectory-aware reward* ``reward_coef * A_grpo(i)``: tied to the outcome of the trajectory the step was part of
  (positive in an episode that beat its group, negative in one that fell behind);
- *trajectory-independent penalty* ``penalty``: the same for every outlier, whatever its episode's outcome, so an
  outlier step in a won episode is not simply reinforced (it is reinforced less than its episode's ordinary steps,
  or pushed down when ``penalty > reward_coef * A_grpo(i)``), and an outlier in a flat group (all episodes equal,
  GRPO advantage 0) still gets ``-penalty``.

``reward_coef = 1, penalty = 0`` is GRPO. A turn without a recorded entropy (``None``) is never an outlier and does not
enter its group's statistics.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Hashable, Sequence

from nlgrad.trainer.advantages import EPS, Normalize, group_normalize


def entropy_outliers(anchors: Sequence[Sequence[Hashable]], entropies: Sequence[Sequence[float | None]], *,
                     z_threshold: float = 1.0, eps: float = EPS) -> list[list[bool]]:
    """Per turn: whether its entropy's |z| within its anchor group exceeds ``z_threshold``."""
    members: dict[Hashable, list[tuple[int, int]]] = defaultdict(list)
    for i, (episode_anchors, episode_h) in enumerate(zip(anchors, entropies)):
        if len(episode_anchors) != len(episode_h):
            raise ValueError("one entropy per turn is needed")
        for t, (anchor, h) in enumerate(zip(episode_anchors, episode_h)):
            if h is not None:
                members[anchor].append((i, t))
    out = [[False] * len(a) for a in anchors]
    for turns in members.values():
        if len(turns) < 2:
            continue
        values = [float(entropies[i][t]) for i, t in turns]
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        if std <= eps:
            continue
        for (i, t), v in zip(turns, values):
            out[i][t] = abs(v - mean) / std > z_threshold
    return out


def stapo_advantages(scores: Sequence[float], anchors: Sequence[Sequence[Hashable]],
                     entropies: Sequence[Sequence[float | None]], *, z_threshold: float = 1.0,
                     reward_coef: float = 0.5, penalty: float = 0.5, normalize: Normalize = "std",
                     eps: float = EPS) -> tuple[list[list[float]], int]:
    """Per-turn STAPO advantages of one group and the number of outlier turns (see the module docstring)."""
    if not (len(scores) == len(anchors) == len(entropies)):
        raise ValueError("one entry per episode is needed")
    episode = group_normalize(scores, normalize, eps)
    outliers = entropy_outliers(anchors, entropies, z_threshold=z_threshold, eps=eps)
    per_turn = [[reward_coef * episode[i] - penalty if flag else episode[i] for flag in flags]
                for i, flags in enumerate(outliers)]
    return per_turn, sum(flag for flags in outliers for flag in flags)
