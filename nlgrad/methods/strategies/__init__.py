"""Swappable strategies behind small protocols (after GEPA's ``strategies/``): acceptance gate, batch sampler,
validation task selector."""

from nlgrad.methods.strategies.acceptance import AcceptanceGate, GateDecision, PairedImprovementGate
from nlgrad.methods.strategies.sampler import BatchSampler, SeededMinibatchSampler
from nlgrad.methods.strategies.validation import FirstDevTasks, ReachedDevTasks, ValidationTasks

__all__ = ["AcceptanceGate", "GateDecision", "PairedImprovementGate", "BatchSampler", "SeededMinibatchSampler",
           "ValidationTasks", "FirstDevTasks", "ReachedDevTasks"]
