"""The propagator: how one trace's outcome becomes feedback for its module calls (NLPG's critique, steps 2-3).

A method takes a *propagator factory* (``LM -> Propagator``), as Trace's ``Optimizer(propagator=...)`` takes a
propagator: the factory is called once per critique with the run's LM, so each critique starts with an empty
``skipped`` list. The default, :class:`CriticBackward`, is the critic's diagnosis followed by the backward pass.
"""

from __future__ import annotations

from typing import Callable, Protocol

from nlgrad.credit.backward import BackwardPass, NodeFeedbackRecord
from nlgrad.credit.critic import Critic
from nlgrad.credit.schemas import Diagnosis
from nlgrad.lm.client import LM
from nlgrad.runtime.trace import Trace


class Propagator(Protocol):
    """Explains one trace's outcome.

    ``propagate`` returns the trace's diagnosis (None when no usable one came back) and one record per module call
    (or loop step) given feedback. Traces are propagated side by side, so ``propagate`` may be called from several
    threads at once. ``skipped`` lists the LM replies that could not be used, each with its reason."""

    skipped: list[dict[str, str]]

    def propagate(self, trace: Trace, *, score: float, success: bool,
                  feedback: str) -> tuple[Diagnosis | None, list[NodeFeedbackRecord]]: ...


PropagatorFactory = Callable[[LM], Propagator]


class CriticBackward:
    """The default propagator: :class:`~nlgrad.credit.critic.Critic` diagnoses the trace, then
    :class:`~nlgrad.credit.backward.BackwardPass` gives its module calls feedback conditioned on the diagnosis
    (loops of at least ``loop_threshold`` calls of one route: the ``localized_steps`` steps that decided it)."""

    def __init__(self, lm: LM, *, loop_threshold: int = 4, localized_steps: int = 3):
        self.critic = Critic(lm)
        self.backward = BackwardPass(self.critic, loop_threshold=loop_threshold, max_localized_steps=localized_steps)

    @property
    def skipped(self) -> list[dict[str, str]]:
        return self.critic.skipped

    def propagate(self, trace: Trace, *, score: float, success: bool,
                  feedback: str) -> tuple[Diagnosis | None, list[NodeFeedbackRecord]]:
        diagnosis = self.critic.diagnose(trace, score, success, feedback)
        return diagnosis, self.backward.run(trace, score=score, success=success, feedback=feedback,
                                            diagnosis=diagnosis)
