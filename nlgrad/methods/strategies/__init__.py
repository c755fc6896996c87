"""Swappable strategies behind small protocols (after GEPA's ``strategies/``): acceptance gate and validation task
selector. The batch sampler is the runtime's (:mod:`nlgrad.runtime.sampler`: the companion trainer draws with it too)."""

from nlgrad.methods.strategies.acceptance import AcceptanceGate, GateDecision, PairedImprovementGate
from nlgrad.methods.strategies.validation import FirstDevTasks, ReachedDevTasks, ValidationTasks

__all__ = ["AcceptanceGate", "GateDecision", "PairedImprovementGate", "ValidationTasks", "FirstDevTasks",
           "ReachedDevTasks"]
