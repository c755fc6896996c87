"""MileGPO: milestone and trap states from a group's successes and failures, as shaping rewards (pure Python).

Within one group (G rollouts of a task), every environment state an episode reached after its start is an anchor.
Its *outcome confidence* is the success rate of the episodes that visited it; its value is how far that rate is
above the group's success rate:

``v(s) = successes_visiting(s) / episodes_visiting(s) - successes(group) / G``

A *milestone* (visited by successes more than the group's average) has ``v > 0``, a *trap* (visited only or mostly
by failures) ``v < 0``; a group that all succeeded or all failed has no milestones or traps (every ``v = 0``).
The step that first reaches a state in an episode earns ``v(state)``; revisits earn nothing. A turn's shaping is
the discounted return of those rewards from the environment step it acted at (``env_step_returns``), added to the
GRPO episode advantage:

``A(i, t) = A_grpo(i) + coef * R_shaping(i, t)``
"""

from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Sequence

from nlgrad.trainer.advantages import EPS, Normalize, env_step_returns, group_normalize


def milestone_values(states: Sequence[Sequence[Hashable]], successes: Sequence[bool]) -> dict[Hashable, float]:
    """``{state: v(state)}`` over the group's episodes (``states[i][0]`` is episode i's start, not an anchor)."""
    if len(states) != len(successes) or not states:
        raise ValueError("one state list and one success flag per episode is needed")
    rate = sum(bool(s) for s in successes) / len(successes)
    visits: dict[Hashable, int] = defaultdict(int)
    wins: dict[Hashable, int] = defaultdict(int)
    for episode, success in zip(states, successes):
        reached = set(episode[1:]) - {episode[0]} if episode else set()
        for state in reached:
            visits[state] += 1
            wins[state] += bool(success)
    return {state: wins[state] / visits[state] - rate for state in visits}


def milestone_step_rewards(states: Sequence[Hashable], values: dict[Hashable, float]) -> list[float]:
    """One reward per environment step of an episode: ``v(states[k])`` for the step k that first reaches it (not
    the start), else 0."""
    seen = {states[0]} if states else set()
    out = []
    for state in states[1:]:
        out.append(0.0 if state in seen else values.get(state, 0.0))
        seen.add(state)
    return out


def milegpo_advantages(scores: Sequence[float], successes: Sequence[bool], states: Sequence[Sequence[Hashable]],
                       turn_steps: Sequence[Sequence[int]], *, coef: float = 1.0, gamma: float = 0.95,
                       normalize: Normalize = "std", eps: float = EPS) -> list[list[float]]:
    """Per-turn MileGPO advantages of one group: ``turn_steps[i][t]`` is the environment step turn t of episode i
    acted at, ``states[i]`` the states episode i visited (start first)."""
    if not (len(scores) == len(successes) == len(states) == len(turn_steps)):
        raise ValueError("one entry per episode is needed")
    episode = group_normalize(scores, normalize, eps)
    values = milestone_values(states, successes)
    out = []
    for i in range(len(scores)):
        shaping = env_step_returns(turn_steps[i], milestone_step_rewards(states[i], values), gamma)
        out.append([episode[i] + coef * r for r in shaping])
    return out
