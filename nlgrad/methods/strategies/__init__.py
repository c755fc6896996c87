"""Swappable strategies behind small protocols (after GEPA's ``strategies/``): acceptance gate, batch sampler."""

from nlgrad.methods.strategies.acceptance import AcceptanceGate, GateDecision, PairedImprovementGate
from nlgrad.methods.strategies.sampler import BatchSampler, SeededMinibatchSampler

__all__ = ["AcceptanceGate", "GateDecision", "PairedImprovementGate", "BatchSampler", "SeededMinibatchSampler"]
