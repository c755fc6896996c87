"""What an optimize run will cost before it runs (``nlgrad optimize --dry-run``): each method declares its own calls.

A method class may define a classmethod ``estimate_calls(options, shape) -> dict[str, float]``: the LM calls of one
iteration, by what makes them (``"agent (rollouts)"``, ``"critic"``, ``"optimizer"``, ...), given its options (the
constructor's defaults updated by the run's ``--method-option``s, see :func:`resolved_options`) and the run's
:class:`RunShape`. :func:`loop_calls` counts what most methods share (the batch's rollouts and the shared gate). A
method that declares nothing is estimated as those shared calls, and the estimate says that its own are missing.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from nlgrad.methods.options import option_parameters

ROLLOUTS = "agent (rollouts)"
GATE = "agent (gate: candidate vs current)"


@dataclass(frozen=True)
class RunShape:
    """What an estimate depends on besides the method: the run's settings and the cost of one rollout."""

    iterations: int
    batch: int
    val: int
    test_n: int
    routes: int  # the program's routes (at least 1)
    calls_per_rollout: float  # agent calls in one rollout: one per route, or about half the step cap in an episode

    def rollouts(self, tasks: float) -> float:
        """Agent calls of ``tasks`` rollouts."""
        return tasks * self.calls_per_rollout


def loop_calls(shape: RunShape, *, rollouts: float | None = None, gate: bool = True) -> dict[str, float]:
    """One iteration's agent calls that the loop makes for most methods: the batch's rollouts (``rollouts`` tasks
    where the method plays more or fewer) and, unless the method decides itself (``gate=False``), the shared gate's
    two runs (current and candidate) on the ``val`` tasks."""
    calls = {ROLLOUTS: shape.rollouts(shape.batch if rollouts is None else rollouts)}
    if gate:
        calls[GATE] = shape.rollouts(2 * shape.val)
    return calls


def resolved_options(cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments ``cls`` would be built with: its constructor's defaults, updated by ``options``."""
    defaults = {name: p.default for name, (p, _) in option_parameters(cls).items()
                if p.default is not inspect.Parameter.empty}
    return {**defaults, **options}


def iteration_calls(cls: type | None, options: dict[str, Any], shape: RunShape) -> tuple[dict[str, float], str]:
    """One iteration's calls as the method ``cls`` declares them, and a note ("" when the method declared them)."""
    declared = getattr(cls, "estimate_calls", None) if cls is not None else None
    if declared is None:
        return loop_calls(shape), "the method declares no estimate of its own calls: only its rollouts and the gate"
    return dict(declared(resolved_options(cls, options), shape)), ""
