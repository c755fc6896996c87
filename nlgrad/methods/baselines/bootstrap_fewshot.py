"""DSPy BootstrapFewShot with random search (``dspy.BootstrapFewShotWithRandomSearch``): worked examples as policy.

The program is rendered for DSPy by :mod:`nlgrad.methods.baselines.dspy_demos`: one ``dspy.Predict`` per route, whose
demos are the route's ``example`` entries, and a ``forward`` that runs the nlgrad program through the shared
executor. DSPy bootstraps demos by running the starting policy (the teacher) on train tasks and keeping the module
calls of rollouts that score at least ``metric_threshold``; each candidate program is a random subset (1 to
``max_bootstrapped_demos`` per route, from a seeded shuffle of the train tasks) and is scored on ``ws.val_tasks``.
Labeled demos are off (nlgrad tasks have no per-module labels), and so is DSPy's "labels only" candidate.

It runs once, in iteration 1, sized to the rollout budget. Rollouts are counted as the executor stores them (one per
candidate folder and task; the teacher's run of a train task is the same for every candidate and read back from
disk): at most ``N`` train rollouts (``train_examples``, the bootstrap pool) plus ``V`` validation rollouts per
evaluated program: the zero-shot program (the starting policy), DSPy's unshuffled candidate and ``K`` shuffled ones,
so ``N + (K + 2) V <= budget`` gives ``K = (budget - N) // V - 2`` (at least 0; ``N`` shrinks first when the budget
is small). The demos of the best program become ``example`` entries (input -> output, with the train task and
rollout folder as provenance), added to the starting policy by plain code; the shared gate's rule (``ws.gate``)
decides on the paired validation scores DSPy already has (best program vs zero-shot, same tasks), so a rejected
candidate is recorded like any other method's.
"""

from __future__ import annotations

import contextlib
import dataclasses

from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.baselines.common import require
from nlgrad.policy import PolicyMemory

MAX_CANDIDATE_PROGRAMS = 16  # DSPy's default number of shuffled candidates


def plan_search(budget: int | None, *, n_train: int, n_val: int, default: int = 6,
                cap: int = MAX_CANDIDATE_PROGRAMS) -> tuple[int, int]:
    """``(train tasks to bootstrap from, shuffled candidate programs)`` that fit the rollout budget (see the module
    docstring); without a budget, ``(n_train, default)``. A budget below ``1 + 2V`` still runs the zero-shot and the
    unshuffled program on one train task (the smallest search there is)."""
    if not budget:
        return n_train, default
    n_train = max(1, min(n_train, budget - 2 * n_val))
    return n_train, max(0, min(cap, (budget - n_train) // max(1, n_val) - 2))


class BootstrapFewShot:
    name = "bootstrap_fewshot"
    reference = True  # nlgrad compare may take it as the reference row (the strongest baseline)
    one_shot = True  # nlgrad compare runs it for one iteration
    budget_option = "max_rollouts"  # compare passes its rollout budget as this option

    def __init__(self, *, max_rollouts: int | None = None, max_bootstrapped_demos: int = 4,
                 num_candidate_programs: int | None = None, train_examples: int = 20, metric_threshold: float = 1.0,
                 field_chars: int = 600):
        if not 1 <= max_bootstrapped_demos <= 8:
            from nlgrad.errors import ConfigError

            raise ConfigError("max_bootstrapped_demos is 1 to 8 (a route holds at most 8 examples)",
                              field="--method-option", value=max_bootstrapped_demos)
        self.max_rollouts, self.max_demos = max_rollouts, max_bootstrapped_demos
        self.num_candidate_programs, self.train_examples = num_candidate_programs, train_examples
        self.metric_threshold, self.field_chars = metric_threshold, field_chars

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        if iteration > 1:
            return Proposal(None, note="BootstrapFewShot runs once, in iteration 1")
        dspy = require("dspy", "dspy", self.name)
        from nlgrad.methods.baselines.dspy_demos import (RolloutLog, candidate_texts, memory_from_examples,
                                                         render_demo_program, rollout_label)
        from nlgrad.methods.baselines.dspy_render import make_dspy_lm, score_metric, to_examples

        n_val = len(ws.val_tasks)
        n_train, planned = plan_search(self.max_rollouts, n_train=min(self.train_examples, len(ws.train_tasks)),
                                       n_val=n_val)
        k = planned if self.num_candidate_programs is None else self.num_candidate_programs
        train = ws.sampler.sample(ws.train_tasks, n_train, iteration)
        log = RolloutLog()
        student, _ = render_demo_program(ws, base=memory, iteration=iteration, log=log, source=self.name,
                                         field_chars=self.field_chars)
        optimizer = dspy.BootstrapFewShotWithRandomSearch(
            metric=score_metric, max_bootstrapped_demos=self.max_demos, max_labeled_demos=0, max_rounds=1,
            num_candidate_programs=k, num_threads=ws.config.workers, metric_threshold=self.metric_threshold)
        restrict = [-3, -1, *range(k)]  # zero-shot, unshuffled, shuffled; not "labels only" (no labels here)
        with open(ws.iteration_dir(iteration) / "bootstrap_fewshot.log", "w", encoding="utf-8") as out, \
                contextlib.redirect_stdout(out), dspy.context(lm=make_dspy_lm(ws.lm, "agent")):
            best = optimizer.compile(student, trainset=to_examples(train), valset=to_examples(ws.val_tasks),
                                     restrict=restrict)
        chosen = best.examples()
        texts = candidate_texts(chosen)
        zero = log.scores_for(lambda tid: rollout_label({}, tid), ws.val_tasks)
        scores = log.scores_for(lambda tid: rollout_label(texts, tid), ws.val_tasks)
        candidates = []
        for c in getattr(best, "candidate_programs", []) or []:
            if hasattr(c.get("program"), "examples"):
                found = candidate_texts(c["program"].examples())
                val = log.scores_for(lambda tid, found=found: rollout_label(found, tid), ws.val_tasks)
                candidates.append({"seed": c.get("seed"), "val_mean": sum(val) / len(val) if val else None,
                                   "examples": found})
        ws.write(iteration, "bootstrap_fewshot.json", {
            "train_tasks": [t.id for t in train], "candidate_programs": k, "max_bootstrapped_demos": self.max_demos,
            "rollouts": log.rollouts, "budget": self.max_rollouts, "zero_shot_scores": zero, "best_scores": scores,
            "best": [dataclasses.asdict(e) for route in sorted(chosen) for e in chosen[route]],
            "candidates": candidates})
        candidate, ops, report = memory_from_examples(memory, chosen, source=self.name, iteration=iteration)
        best_mean = sum(scores) / len(scores) if scores else None
        if not ops:
            return Proposal(None, [], None, best_mean, note="BootstrapFewShot kept the zero-shot program")
        decision = ws.gate.decide(scores, zero)
        decision = dataclasses.replace(decision, details={
            "selected_by": f"BootstrapFewShotWithRandomSearch's best of {len(candidates)} programs",
            "rollouts": log.rollouts})
        candidate = candidate.model_copy(update={"version": 0, "parent": memory.version or None})
        return Proposal(candidate, ops, report, best_mean, gate_decision=decision,
                        note=f"BootstrapFewShot: {len(ops)} example(s) from {len(candidates)} programs; "
                             f"{report.summary() if report else ''}")
