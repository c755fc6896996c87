"""How feedback flows (the *propagator*): critic diagnosis of a trace, and the backward pass over its graph.

Kept apart from how policies change (``nlgrad.policy`` and ``nlgrad.methods``), as Trace keeps propagators apart
from optimizers.
"""

from nlgrad.credit.backward import BackwardPass, NodeFeedbackRecord
from nlgrad.credit.critic import Critic
from nlgrad.credit.propagator import CriticBackward, Propagator, PropagatorFactory
from nlgrad.credit.schemas import Diagnosis, LocalizedSteps, NodeFeedback

__all__ = ["BackwardPass", "Critic", "CriticBackward", "Diagnosis", "LocalizedSteps", "NodeFeedback",
           "NodeFeedbackRecord", "Propagator", "PropagatorFactory"]
