"""HiDiffTIR: GRPO advantages scaled by how hard the group was and how often each route fails (pure Python).

A group's *difficulty* is ``1 - mean(score)`` of its G rollouts (scores in [0, 1]): a success among mostly failures
carries more information than one among successes. A route's *failure rate* is, over all turns of the step's batch,
the share of that route's turns that belong to failed episodes (``success`` False): calls of a module that usually
ends in failure (e.g. the agent's act in a hard room, a verifier) get stronger credit than calls that rarely matter.

``A(i, t) = A_grpo(i) * (1 + difficulty_weight * difficulty(group)) * (1 + route_weight * failure_rate(route_t))``

With both weights 0 this is GRPO. The scales are >= 1 and never flip an advantage's sign.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

from nlgrad.trainer.advantages import EPS, Normalize, group_normalize


def group_difficulty(scores: Sequence[float]) -> float:
    """``1 - mean(score)``, clipped to [0, 1]; an empty group is 0."""
    if not scores:
        return 0.0
    return min(max(1.0 - sum(float(s) for s in scores) / len(scores), 0.0), 1.0)


def route_failure_rates(turns: Iterable[tuple[str, bool]]) -> dict[str, float]:
    """``{route: share of its turns whose episode failed}`` from ``(route, episode_success)`` pairs."""
    total: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    for route, success in turns:
        total[route] += 1
        failed[route] += not success
    return {route: failed[route] / total[route] for route in total}


def hidifftir_advantages(scores: Sequence[float], routes: Sequence[Sequence[str]], failure_rates: dict[str, float],
                         *, difficulty_weight: float = 1.0, route_weight: float = 1.0, normalize: Normalize = "std",
                         eps: float = EPS) -> list[list[float]]:
    """Per-turn HiDiffTIR advantages of one group: ``routes[i][t]`` is the route of turn t of episode i;
    ``failure_rates`` comes from ``route_failure_rates`` over the whole batch (a route missing from it counts 0)."""
    if len(scores) != len(routes):
        raise ValueError("one route list per episode is needed")
    episode = group_normalize(scores, normalize, eps)
    group_scale = 1.0 + difficulty_weight * group_difficulty(scores)
    return [[episode[i] * group_scale * (1.0 + route_weight * failure_rates.get(route, 0.0)) for route in turns]
            for i, turns in enumerate(routes)]
