"""Advantage estimators of the companion trainer: small pure functions over plain Python numbers (no torch).

Each works on one *group*: the G rollouts of the same task (same seed), so every advantage is relative to what the
same model did on the same problem. Conventions, shared by all of them:

- ``normalize="std"``: ``(x - mean) / (std + eps)`` with the population std (ddof=0); ``"mean"``: ``x - mean``.
  A group whose values are all equal gets all-zero advantages (no signal, no noise).
- A *turn* is one call of the learner model (one sampled completion); an episode is a list of turns. Per-turn
  advantages come back as one list per episode, aligned with its turns.

GRPO   group-normalized episode return, the same for every turn of an episode.
GiGPO  GRPO's episode advantage plus ``omega`` times a step advantage: returns discounted by environment steps, of
       the turns that share an *anchor* (same environment state) across the group's rollouts, normalized within
       that anchor group.
ProGPO when no rollout of a group succeeded, the relative signal is first-visit state coverage (distinct newly
       visited states) instead of the outcome; the step-level variant credits each step's novel-state visit.
CIGPO  outcome advantage plus a curriculum-weighted information-gain advantage: per-turn
       ``log p_ref(y* | q, e_<=t) - log p_ref(y* | q, e_<t)``, normalized over the group's informative (non-zero
       gain) turns separately from the outcome; turns that revealed nothing get 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Hashable, Literal, Sequence

Normalize = Literal["std", "mean"]
EPS = 1e-6


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _std(xs: Sequence[float]) -> float:
    if not xs:
        return 0.0
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def group_normalize(values: Sequence[float], normalize: Normalize = "std", eps: float = EPS) -> list[float]:
    """Values relative to their group: minus the mean, divided by the population std when ``normalize="std"``."""
    if normalize not in ("std", "mean"):
        raise ValueError(f"normalize must be 'std' or 'mean', got {normalize!r}")
    values = [float(v) for v in values]
    if not values:
        return []
    m = _mean(values)
    if all(abs(v - m) <= eps for v in values):
        return [0.0] * len(values)
    if normalize == "mean":
        return [v - m for v in values]
    s = _std(values)
    return [(v - m) / (s + eps) for v in values]


def broadcast(episode_advantages: Sequence[float], turns_per_episode: Sequence[int]) -> list[list[float]]:
    """Give every turn of episode i the episode advantage i."""
    if len(episode_advantages) != len(turns_per_episode):
        raise ValueError("one advantage per episode is needed")
    return [[float(a)] * int(n) for a, n in zip(episode_advantages, turns_per_episode)]


# ---- GRPO -------------------------------------------------------------------------------------------------------
def grpo_advantages(returns: Sequence[float], normalize: Normalize = "std", eps: float = EPS) -> list[float]:
    """GRPO: the group-normalized episode return ``(R_i - mean(R)) / (std(R) + eps)``."""
    return group_normalize(returns, normalize, eps)


# ---- GiGPO ------------------------------------------------------------------------------------------------------
def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """``R_t = r_t + gamma * R_{t+1}`` (return-to-go of every step)."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    out, running = [0.0] * len(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out


def sparse_rewards(n_turns: int, outcome: float) -> list[float]:
    """The outcome reward on the last turn, zero before it (the sparse reward of an episodic task)."""
    return [0.0] * max(0, n_turns - 1) + ([float(outcome)] if n_turns > 0 else [])


def env_step_returns(turn_steps: Sequence[int], step_rewards: Sequence[float], gamma: float) -> list[float]:
    """Return-to-go of every turn, discounted by *environment steps*, not LM turns.

    ``step_rewards[k]`` is the reward of the action played in state k (k = 0..T-1); a turn that acted in state k
    (``turn_steps[t] == k``) gets ``R_k = sum_{j >= k} gamma^(j - k) r_j``, so several LM calls in one state (an
    act and its confirmations) share one return and are not discounted against each other. A turn at ``k >= T``
    (its action was never played) gets 0.
    """
    returns = discounted_returns(step_rewards, gamma)
    return [returns[k] if 0 <= k < len(returns) else 0.0 for k in turn_steps]


def outcome_step_rewards(horizon: int, outcome: float) -> list[float]:
    """Sparse rewards by environment step: the outcome on the last of ``horizon`` steps (on step 0 when the
    episode played none)."""
    return sparse_rewards(max(int(horizon), 1), outcome)


def step_group_advantages(anchors: Sequence[Sequence[Hashable]], step_returns: Sequence[Sequence[float]],
                          normalize: Normalize = "mean", eps: float = EPS) -> list[list[float]]:
    """GiGPO's step advantage: turns of the group's episodes that share an anchor observation form a step group;
    each turn's discounted return is normalized within its step group (a singleton group gives 0).

    ``anchors[i][t]`` is the anchor key of turn t of episode i, ``step_returns[i][t]`` its discounted return.
    """
    if [len(a) for a in anchors] != [len(r) for r in step_returns]:
        raise ValueError("anchors and step returns must have the same shape")
    members: dict[Hashable, list[tuple[int, int]]] = defaultdict(list)
    for i, episode in enumerate(anchors):
        for t, key in enumerate(episode):
            members[key].append((i, t))
    out = [[0.0] * len(episode) for episode in anchors]
    for positions in members.values():
        normalized = group_normalize([step_returns[i][t] for i, t in positions], normalize, eps)
        for (i, t), value in zip(positions, normalized):
            out[i][t] = value
    return out


def gigpo_advantages(returns: Sequence[float], anchors: Sequence[Sequence[Hashable]],
                     step_returns: Sequence[Sequence[float]], *, omega: float = 1.0,
                     normalize: Normalize = "mean", eps: float = EPS) -> list[list[float]]:
    """GiGPO: ``A(i, t) = A_episode(i) + omega * A_step(i, t)``.

    ``returns[i]`` is episode i's return (its episode advantage is group-normalized with ``normalize``);
    ``step_returns[i][t]`` the discounted return-to-go of its turn t (see ``env_step_returns``), normalized within
    anchor-state groups (``normalize`` again; mean-normalization is the default, as in GiGPO without std).
    """
    if not (len(returns) == len(anchors) == len(step_returns)):
        raise ValueError("returns, anchors and step returns need one entry per episode")
    episode = group_normalize(returns, normalize, eps)
    step = step_group_advantages(anchors, step_returns, normalize, eps)
    return [[episode[i] + omega * a for a in step[i]] for i in range(len(returns))]


# ---- ProGPO -----------------------------------------------------------------------------------------------------
def first_visit_coverage(observations: Sequence[Hashable]) -> int:
    """Distinct states an episode newly visited: keys other than the starting one (``observations[0]``), each
    counted at its first visit only (the sum of ``novel_state_rewards``)."""
    if not observations:
        return 0
    start = observations[0]
    return len({o for o in observations[1:] if o != start})


def novel_state_rewards(states: Sequence[Hashable]) -> list[float]:
    """ProGPO's step-level progress signal: ``states[0]`` is the state after reset, ``states[k]`` after step k;
    the action of step k (played in state k-1) earns 1.0 when ``states[k]`` was not visited before in the episode,
    else 0.0. Returns one reward per environment step (``len(states) - 1``)."""
    return [0.0 if states[k] in states[:k] else 1.0 for k in range(1, len(states))]


def progpo_advantages(outcomes: Sequence[float], successes: Sequence[bool], coverages: Sequence[float],
                      normalize: Normalize = "std", eps: float = EPS) -> tuple[list[float], str]:
    """ProGPO (episode level): the group-normalized outcome; when no rollout of the group succeeded (its success
    flags, not its scores: partial credit does not hide an all-failed group), the group-normalized first-visit
    coverage instead. Returns the advantages and which signal was used ("outcome" or "coverage")."""
    if not (len(outcomes) == len(successes) == len(coverages)):
        raise ValueError("one outcome, success flag and coverage per episode is needed")
    if outcomes and not any(successes):
        return group_normalize(coverages, normalize, eps), "coverage"
    return group_normalize(outcomes, normalize, eps), "outcome"


def progpo_step_advantages(outcomes: Sequence[float], successes: Sequence[bool],
                           turn_steps: Sequence[Sequence[int]], novelty: Sequence[Sequence[float]], *,
                           gamma: float = 0.95, normalize: Normalize = "std",
                           eps: float = EPS) -> tuple[list[list[float]], str]:
    """ProGPO (step level): a group with a success gets the outcome advantage on every turn; an all-failed group
    gets, per turn, its discounted return of novel-state visits (``env_step_returns`` over ``novelty[i]``, the
    ``novel_state_rewards`` of episode i), normalized over all turns of the group."""
    if not (len(outcomes) == len(successes) == len(turn_steps) == len(novelty)):
        raise ValueError("one entry per episode is needed")
    if not outcomes or any(successes):
        return broadcast(group_normalize(outcomes, normalize, eps), [len(s) for s in turn_steps]), "outcome"
    returns = [env_step_returns(steps, rewards, gamma) for steps, rewards in zip(turn_steps, novelty)]
    flat = group_normalize([r for episode in returns for r in episode], normalize, eps)
    out, k = [], 0
    for episode in returns:
        out.append(flat[k:k + len(episode)])
        k += len(episode)
    return out, "novelty"


# ---- CIGPO ------------------------------------------------------------------------------------------------------
def information_gain_rewards(logps: Sequence[float]) -> list[float]:
    """Per-turn information gain from a chain of reference log-likelihoods of the gold answer.

    ``logps[0] = log p_ref(y* | q)`` (no evidence), ``logps[t] = log p_ref(y* | q, e_<=t)``; turn t (1-based) gains
    ``logps[t] - logps[t - 1]``. Returns ``len(logps) - 1`` values.
    """
    return [float(logps[t]) - float(logps[t - 1]) for t in range(1, len(logps))]


def curriculum_weight(step: int, total_steps: int, *, start: float = 1.0, end: float = 0.0,
                      schedule: Literal["linear", "cosine", "constant"] = "linear") -> float:
    """Weight of the information-gain term at optimization step ``step`` (0-based) of ``total_steps``: dense
    shaping early, the outcome alone late. ``linear``/``cosine`` go from ``start`` to ``end``; ``constant`` is
    ``start``."""
    if schedule == "constant" or total_steps <= 1:
        return float(start)
    progress = min(max(step / (total_steps - 1), 0.0), 1.0)
    if schedule == "linear":
        return float(start + (end - start) * progress)
    if schedule == "cosine":
        return float(end + (start - end) * 0.5 * (1.0 + math.cos(math.pi * progress)))
    raise ValueError(f"unknown curriculum schedule {schedule!r}")


def cigpo_advantages(outcomes: Sequence[float], info_gains: Sequence[Sequence[float]], *, weight: float,
                     normalize: Normalize = "std", eps: float = EPS) -> list[list[float]]:
    """CIGPO: ``A(i, t) = A_outcome(i) + weight * A_ig(i, t)``.

    The outcome is group-normalized over the episodes; the information gains are normalized separately (their own
    scale), over the group's *informative* turns only: a turn whose gain is exactly 0 revealed no evidence, so it
    gets an information-gain advantage of exactly 0 and stays out of the mean and std (otherwise every such turn,
    the answer turn included, would get ``-mean/std``).
    """
    if len(outcomes) != len(info_gains):
        raise ValueError("one info-gain list per episode is needed")
    outcome = group_normalize(outcomes, normalize, eps)
    informative = [(i, t) for i, episode in enumerate(info_gains) for t, g in enumerate(episode) if float(g) != 0.0]
    normalized = group_normalize([info_gains[i][t] for i, t in informative], normalize, eps)
    ig = [[0.0] * len(episode) for episode in info_gains]
    for (i, t), value in zip(informative, normalized):
        ig[i][t] = value
    return [[outcome[i] + weight * a for a in ig[i]] for i in range(len(info_gains))]
