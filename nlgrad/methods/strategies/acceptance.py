"""Acceptance gates: decide whether a candidate policy replaces the current one, from paired validation scores."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from nlgrad.stats import paired_difference


@dataclass(frozen=True)
class GateDecision:
    """Whether a candidate policy replaces the current one, and the paired evidence for it.

    The shared gate returns one; a method that decided itself (its own paired A/B test, or a library's own
    selection) returns one as :attr:`Proposal.gate_decision <nlgrad.methods.base.Proposal>` and the loop does not
    gate again. ``details`` holds a method's extra evidence; :meth:`to_dict` (what ``gate.json`` and the state
    record hold) puts its keys next to the fields."""

    accept: bool
    mean_diff: float
    ci95: tuple[float, float]
    wins: int
    losses: int
    candidate_mean: float
    current_mean: float
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def self_selected(cls, candidate_mean: float | None, current_mean: float | None, reason: str, *,
                      accept: bool = True, **details: Any) -> "GateDecision":
        """A decision made outside a paired test (a library's own selection, a static baseline): the difference of
        the two means, no win/loss counts, and no interval: ``ci95`` holds the difference at both ends only to keep
        the record's shape, and ``paired_test: False`` says so to readers; a missing or NaN mean counts as 0."""
        cand, cur = _number(candidate_mean), _number(current_mean)
        return cls(accept, cand - cur, (cand - cur, cand - cur), 0, 0, cand, cur, reason,
                   {"paired_test": False, **details})

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "details"}
        out["ci95"] = list(self.ci95)
        return {**out, **self.details}


def _number(value: float | None) -> float:
    return float(value) if value is not None and not math.isnan(value) else 0.0


AUTO_CI_MIN_TASKS = 30  # paired validation tasks from which the gate requires the CI by default


class AcceptanceGate(Protocol):
    """Contract: given per-task scores of the candidate and of the current policy on the *same* validation tasks
    (same order, same seeds), return a decision with the paired difference and its interval. Must be deterministic."""

    def decide(self, candidate: list[float], current: list[float]) -> GateDecision: ...


class PairedImprovementGate:
    """Accept only a strict improvement beyond a noise margin: mean paired difference > ``margin``, more tasks won
    than lost, and at least ``min_wins`` tasks won (all of them when there are fewer validation tasks than that).
    With ``require_ci=True`` the 95% bootstrap interval of the difference must also exclude 0; with ``None`` (the
    default) that is required when there are at least ``AUTO_CI_MIN_TASKS`` paired tasks, where a bootstrap interval
    can tell, and not on fewer.

    ``min_wins=2`` (the default) is there because one task that flips is noise, not evidence of an improvement."""

    def __init__(self, margin: float = 0.02, require_ci: bool | None = None, min_wins: int = 2):
        if margin < 0:
            raise ValueError(f"margin must be >= 0, got {margin}")
        if min_wins < 1:
            raise ValueError(f"min_wins must be >= 1, got {min_wins}")
        self.margin, self.require_ci, self.min_wins = margin, require_ci, min_wins

    @classmethod
    def from_config(cls, config) -> "PairedImprovementGate":
        """The gate an :class:`~nlgrad.methods.base.OptimizeConfig` asks for (``margin``, ``gate_min_wins``,
        ``gate_require_ci``)."""
        return cls(margin=config.margin, require_ci=config.gate_require_ci, min_wins=config.gate_min_wins)

    def decide(self, candidate: list[float], current: list[float]) -> GateDecision:
        est = paired_difference(candidate, current)
        wins = sum(c > b for c, b in zip(candidate, current))
        losses = sum(c < b for c, b in zip(candidate, current))
        cand_mean = sum(candidate) / len(candidate) if candidate else 0.0
        cur_mean = sum(current) / len(current) if current else 0.0
        needed = min(self.min_wins, len(candidate))
        require_ci = self.require_ci if self.require_ci is not None else len(candidate) >= AUTO_CI_MIN_TASKS
        if not candidate:
            accept, reason = False, "no validation tasks"
        elif est.mean <= self.margin:
            accept, reason = False, f"mean paired difference {est.mean:+.3f} is not above the margin {self.margin}"
        elif wins <= losses:
            accept, reason = False, f"won {wins} tasks but lost {losses}"
        elif wins < needed:
            accept, reason = False, f"won {wins} task(s), fewer than the {needed} required (--gate-min-wins)"
        elif require_ci and est.lo <= 0:
            accept, reason = False, f"95% CI of the difference [{est.lo:+.3f}, {est.hi:+.3f}] includes 0"
        else:
            accept, reason = True, f"improved by {est.mean:+.3f} (won {wins}, lost {losses})"
        return GateDecision(accept, est.mean, (est.lo, est.hi), wins, losses, cand_mean, cur_mean, reason)
