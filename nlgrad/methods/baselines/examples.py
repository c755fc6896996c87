"""Example baselines for intent routing: ``random_examples`` (the control) and ``knn_fewshot`` (the reference).

Both write a policy of ``example`` entries (:mod:`nlgrad.methods.example_bank`) with the ``examples`` selection:
each call is shown the ``k`` examples nearest its input, as prior turns, exactly as NLPG's learned examples are.

- ``random_examples``: ``n`` train tasks drawn at random (seeded by the run's seed), one example per route each. Run
  it with the entry count of the learned policy it is compared with: what learning from failures adds over the same
  number of examples chosen blindly.
- ``knn_fewshot``: every train task (or the first ``n``), the retrieval of DSPy's ``KNNFewShot`` with labeled demos
  (the ``k`` nearest train examples of each input, by embedding similarity). Unbounded: a reference for what
  retrieval over the whole split reaches, not a peer at equal size. DSPy's own class would also bootstrap the
  retrieved demos through the program on every call; with labeled train examples that adds nothing here, and the
  policy file keeps the retrieval reviewable and deployable like any other.

Neither runs a rollout: the policy is adopted as is (no validation gate).
"""

from __future__ import annotations

import random

from nlgrad.errors import ConfigError
from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.example_bank import EXAMPLES_PER_CALL, bank_memory, example_ops, with_examples
from nlgrad.methods.strategies.acceptance import GateDecision
from nlgrad.policy import PolicyMemory


class RandomExamples:
    """``n`` random train examples, each call shown its ``k`` nearest."""

    name = "random_examples"
    one_shot = True

    def __init__(self, *, n: int = 154, k: int = EXAMPLES_PER_CALL, embedder: str = "auto"):
        if n < 1 or k < 1:
            raise ConfigError("n and k must be at least 1", field="--method-option", value=f"n={n}, k={k}")
        self.n, self.k, self.embedder = n, k, embedder

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        if memory.n_entries():
            return Proposal(None, note="static baseline: the examples are already drawn")
        tasks = list(ws.train_tasks)
        random.Random(f"random_examples:{ws.config.seed}").shuffle(tasks)
        chosen = tasks[: self.n]
        ops = example_ops(ws.program, chosen, reason="drawn at random from the train split")
        candidate, report = with_examples(memory, ops, source=self.name, max_examples=len(chosen),
                                          iteration=iteration, k=self.k, embedder=self.embedder)
        ws.write(iteration, "examples.json", {"task_ids": [t.id for t in chosen], "k": self.k})
        decision = GateDecision.self_selected(None, None, "static baseline: random examples are adopted as is",
                                              evaluated=False)
        return Proposal(candidate, ops, report, note=f"{len(chosen)} random train examples", gate_decision=decision)


class KNNFewShot:
    """Every train example (or the first ``n``), each call shown its ``k`` nearest (DSPy KNNFewShot's retrieval)."""

    name = "knn_fewshot"
    one_shot = True

    def __init__(self, *, n: int | None = None, k: int = EXAMPLES_PER_CALL, embedder: str = "auto"):
        if (n is not None and n < 1) or k < 1:
            raise ConfigError("n and k must be at least 1", field="--method-option", value=f"n={n}, k={k}")
        self.n, self.k, self.embedder = n, k, embedder

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        if memory.n_entries():
            return Proposal(None, note="static baseline: the train split is already the bank")
        tasks = list(ws.train_tasks)[: self.n] if self.n else list(ws.train_tasks)
        candidate = bank_memory(memory, ws.program, tasks, source=self.name, k=self.k, embedder=self.embedder)
        decision = GateDecision.self_selected(None, None, "reference: every train example, k nearest per call",
                                              evaluated=False)
        return Proposal(candidate, note=f"{len(tasks)} train examples", gate_decision=decision)
