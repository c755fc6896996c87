"""MileGPO: milestones and traps from a group's own rollouts, reliability-calibrated and progress-contrastive, as
shaping rewards (pure Python, no torch).

Within one group (G rollouts of a task, the same start), ``states[i]`` are the environment states episode i went
through (its start first); ``p`` is the group's success rate, and for every state ``s``: ``n(s)`` the episodes that
visited it, ``rate(s)`` the share of them that succeeded. Three parts, as the method describes them:

1. **Milestone discovery.** A *candidate milestone* is a state (not the start) on a successful rollout whose success
   rate beats the group's, ``rate(s) > p``; a *candidate trap* is a state (not the start) that no success visited and
   that *recurs* on failed rollouts (``n(s) >= 2``), when the group has a success at all. A group that all won or all
   failed has neither.
2. **Reliability-calibrated shaping (RCS).** A candidate's value is its outcome confidence shrunk by how much evidence
   there is: ``v(s) = n(s) / (n(s) + prior) * (rate(s) - p)`` (``prior`` = ``--milestone-prior``, 1.0). A state seen
   once is down-weighted (half its raw value) and a state seen by every episode of a large group keeps nearly all of
   it; ``prior = 0`` is the raw confidence. Non-candidates (and the start) have ``v = 0``.
3. **Progress-contrastive calibration (PCC).** The environment step that first reaches a candidate ``s`` from the
   state ``u`` it was played in earns ``v(s)`` only when both tests agree with the candidate's sign:

   - *local progress*: the step moved the value in that direction, ``v(s) > v(u)`` for a milestone (``< `` for a
     trap); a step from a stronger milestone to a weaker one is not progress;
   - *same-state branch evidence*: the transition ``u -> s`` outperforms the alternatives observed from ``u`` in the
     group: ``Q(u -> s) > Q_alt(u, s)`` for a milestone (``<`` for a trap), where ``Q(u -> s)`` is the success rate of
     the episodes that took that transition and ``Q_alt`` the success rate of the episodes that took any other
     transition out of ``u`` (a no-op step that stayed in ``u`` is one of them). With no alternative observed from
     ``u`` there is no evidence against the transition, and it keeps ``v(s)``.

   Every other step earns 0 (revisits included). A turn's shaping is the discounted return of those rewards from the
   environment step it acted at (``env_step_returns``), added to the GRPO episode advantage:

``A(i, t) = A_grpo(i) + coef * R_shaping(i, t)``
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Hashable, Sequence

from nlgrad.trainer.advantages import EPS, Normalize, env_step_returns, group_normalize


@dataclass
class GroupEvidence:
    """Who visited what, and who took which transition, in one group (episode indices)."""

    rate: float  # the group's success rate p
    visitors: dict[Hashable, set[int]] = field(default_factory=lambda: defaultdict(set))
    takers: dict[tuple[Hashable, Hashable], set[int]] = field(default_factory=lambda: defaultdict(set))
    starts: set[Hashable] = field(default_factory=set)
    successes: tuple[bool, ...] = ()

    def win_rate(self, episodes: set[int]) -> float:
        return sum(self.successes[i] for i in episodes) / len(episodes) if episodes else 0.0

    def state_rate(self, state: Hashable) -> float:
        return self.win_rate(self.visitors.get(state, set()))

    def transition_rate(self, source: Hashable, target: Hashable) -> float:
        return self.win_rate(self.takers.get((source, target), set()))

    def alternative_rate(self, source: Hashable, target: Hashable) -> float | None:
        """Success rate of the episodes that left ``source`` by another transition; None when none did."""
        others: set[int] = set()
        for (u, s), episodes in self.takers.items():
            if u == source and s != target:
                others |= episodes
        return self.win_rate(others) if others else None


def group_evidence(states: Sequence[Sequence[Hashable]], successes: Sequence[bool]) -> GroupEvidence:
    if len(states) != len(successes) or not states:
        raise ValueError("one state list and one success flag per episode is needed")
    flags = tuple(bool(s) for s in successes)
    evidence = GroupEvidence(rate=sum(flags) / len(flags), successes=flags)
    for i, episode in enumerate(states):
        if not episode:
            continue
        evidence.starts.add(episode[0])
        for state in episode:
            evidence.visitors[state].add(i)
        for source, target in zip(episode, episode[1:]):
            evidence.takers[(source, target)].add(i)
    return evidence


def milestone_values(states: Sequence[Sequence[Hashable]], successes: Sequence[bool], *,
                     prior: float = 1.0) -> dict[Hashable, float]:
    """``{candidate: v(candidate)}`` (discovery + reliability calibration); every other state's value is 0."""
    return candidate_values(group_evidence(states, successes), prior=prior)


def candidate_values(evidence: GroupEvidence, *, prior: float = 1.0) -> dict[Hashable, float]:
    if prior < 0:
        raise ValueError(f"prior must be >= 0, got {prior}")
    p, out = evidence.rate, {}
    for state, visitors in evidence.visitors.items():
        if state in evidence.starts:
            continue
        n, wins = len(visitors), sum(evidence.successes[i] for i in visitors)
        rate = wins / n
        milestone = wins >= 1 and rate > p
        trap = wins == 0 and n >= 2 and p > 0
        if milestone or trap:
            out[state] = n / (n + prior) * (rate - p)
    return out


def milestone_step_rewards(states: Sequence[Hashable], values: dict[Hashable, float],
                           evidence: GroupEvidence | None = None) -> list[float]:
    """One reward per environment step of an episode: ``v(states[k])`` for the step k that first reaches a candidate
    and passes progress-contrastive calibration against ``evidence`` (without ``evidence``: no calibration), else 0."""
    seen = {states[0]} if states else set()
    out = []
    for source, target in zip(states, states[1:]):
        value = values.get(target, 0.0)
        if target in seen or value == 0.0:
            out.append(0.0)
        elif evidence is not None and not passes_calibration(source, target, values, evidence):
            out.append(0.0)
        else:
            out.append(value)
        seen.add(target)
    return out


def passes_calibration(source: Hashable, target: Hashable, values: dict[Hashable, float],
                       evidence: GroupEvidence) -> bool:
    """PCC: local progress (the value moved in the candidate's direction) and same-state branch evidence (the
    transition beats, for a milestone, or trails, for a trap, the alternatives observed from ``source``)."""
    sign = 1.0 if values[target] > 0 else -1.0
    if sign * (values[target] - values.get(source, 0.0)) <= 0:
        return False
    alternative = evidence.alternative_rate(source, target)
    if alternative is None:
        return True
    return sign * (evidence.transition_rate(source, target) - alternative) > 0


def milegpo_advantages(scores: Sequence[float], successes: Sequence[bool], states: Sequence[Sequence[Hashable]],
                       turn_steps: Sequence[Sequence[int]], *, coef: float = 1.0, gamma: float = 0.95,
                       prior: float = 1.0, normalize: Normalize = "std", eps: float = EPS) -> list[list[float]]:
    """Per-turn MileGPO advantages of one group: ``turn_steps[i][t]`` is the environment step turn t of episode i
    acted at, ``states[i]`` the states episode i visited (start first)."""
    if not (len(scores) == len(successes) == len(states) == len(turn_steps)):
        raise ValueError("one entry per episode is needed")
    episode = group_normalize(scores, normalize, eps)
    evidence = group_evidence(states, successes)
    values = candidate_values(evidence, prior=prior)
    out = []
    for i in range(len(scores)):
        shaping = env_step_returns(turn_steps[i], milestone_step_rewards(states[i], values, evidence), gamma)
        out.append([episode[i] + coef * r for r in shaping])
    return out
