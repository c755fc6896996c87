"""IAPO: a trajectory's advantage split across its turns by routing weights from the trace graph (pure Python).

Each turn (module call) has two counts read from the trace's data edges (:mod:`nlgrad.trainer.trace_uses`):
``supported`` — environment steps and tool calls that used its output and succeeded — and ``failed`` — those that
used it and failed. A turn's routing weight depends on the sign of its episode's GRPO advantage ``A_i``: a turn
whose output was used successfully gets more of a positive advantage, a turn whose output led to failed uses more
of a negative one:

``w(i, t) = 1 + coef * supported(i, t)`` if ``A_i > 0``; ``1 + coef * failed(i, t)`` if ``A_i < 0``

and the episode's advantage is split across its ``T_i`` turns in proportion to the weights, keeping the episode's
total ``T_i * A_i`` (the same total as GRPO, which gives ``A_i`` to every turn):

``A(i, t) = A_i * T_i * w(i, t) / sum_s w(i, s)``

``coef = 0`` (or equal counts on every turn) is GRPO.
"""

from __future__ import annotations

from typing import Sequence

from nlgrad.trainer.advantages import EPS, Normalize, group_normalize


def routing_weights(advantage: float, supported: Sequence[int], failed: Sequence[int], *,
                    coef: float = 1.0) -> list[float]:
    """The routing weight of every turn of one episode (see the module docstring)."""
    if len(supported) != len(failed):
        raise ValueError("one supported and one failed count per turn is needed")
    uses = supported if advantage > 0 else failed
    return [1.0 + coef * float(u) for u in uses]


def iapo_advantages(scores: Sequence[float], supported: Sequence[Sequence[int]], failed: Sequence[Sequence[int]], *,
                    coef: float = 1.0, normalize: Normalize = "std", eps: float = EPS) -> list[list[float]]:
    """Per-turn IAPO advantages of one group: ``supported[i][t]``/``failed[i][t]`` are turn t of episode i's uses."""
    if not (len(scores) == len(supported) == len(failed)):
        raise ValueError("one entry per episode is needed")
    episode = group_normalize(scores, normalize, eps)
    out = []
    for a, sup, fail in zip(episode, supported, failed):
        weights = routing_weights(a, sup, fail, coef=coef)
        total = sum(weights)
        out.append([a * len(weights) * w / total for w in weights] if total else [])
    return out
