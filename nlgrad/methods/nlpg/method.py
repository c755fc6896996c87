"""NLPG (Natural-Language Policy Gradients): route-local corrections from recurring failures.

One ``propose`` call is steps 1-6 of an iteration (the shared loop in :mod:`nlgrad.optimize` does step 7, the gate):

1. rollout a seeded minibatch of train tasks with the current policy;
2. the critic diagnoses failed / low-scoring traces (and a few successes for contrast);
3. the backward pass gives each module call feedback conditioned on its successors (loops: localized steps);
4. per route, the optimizer turns node feedback into general corrections linked to their traces; with
   ``abstract=True`` it then reads a route's corrections together and writes general lessons that each cover >= 2
   of them (:mod:`~nlgrad.methods.nlpg.abstraction`), added to the pool with the union of the covered traces;
5. aggregation keeps corrections supported by >= ``min_support`` distinct traces, merges near-duplicates, resolves
   contradictions toward the majority, drops ones that copy instance details, and emits operations;
6. :func:`apply_update` applies them under the policy bounds (deterministic code; the LM never edits the policy).

Everything an iteration learned is written as JSON under ``iter-NNNN/`` so "why did this rule appear?" can be
answered from files: ``diagnoses.json``, ``feedback.json``, ``proposals.json``, ``abstractions.json`` (with
``abstract``), ``aggregate.json``, ``update.json``.
"""

from __future__ import annotations

from typing import Any

from nlgrad.credit.backward import NodeFeedbackRecord
from nlgrad.credit.propagator import CriticBackward, Propagator, PropagatorFactory
from nlgrad.lm.fanout import fan_out
from nlgrad.errors import ConfigError
from nlgrad.methods.base import Proposal, Workspace, guard_not_test
from nlgrad.methods.conditions import route_inputs
from nlgrad.methods.estimate import RunShape, loop_calls
from nlgrad.methods.correction_similarity import contradiction_threshold, correction_similarity
from nlgrad.methods.lesson_checks import workspace_instance_tokens
from nlgrad.runtime.module import route_instructions
from nlgrad.methods.nlpg.abstraction import CorrectionAbstractor
from nlgrad.methods.example_bank import EXAMPLES_PER_CALL, example_selection, held_examples, with_example_room
from nlgrad.methods.nlpg.aggregate import aggregate, attribute_support
from nlgrad.methods.nlpg.confusion_examples import COVERS, PARTNERS, ConfusionExamples, cover_mode
from nlgrad.methods.nlpg.example_use import SAMPLES as EXAMPLE_USE_SAMPLES
from nlgrad.methods.nlpg.example_use import (ExampleUseLessonWriter, IgnoredExample, has_example_use_lesson,
                                             ignored_examples)
from nlgrad.methods.nlpg.failure_groups import FailureGroup, group_failures
from nlgrad.methods.nlpg.proposals import Candidate, CorrectionProposer
from nlgrad.methods.nlpg.tag_lessons import TagLessonWriter
from nlgrad.policy import PolicyMemory, UpdateProvenance, apply_update
from nlgrad.runtime.executor import TaskResult


class NLPG:
    name = "nlpg"

    def __init__(self, *, min_support: int = 2, max_diagnose: int = 6, contrast_successes: int = 1,
                 loop_threshold: int = 4, localized_steps: int = 3, max_items: int = 12,
                 max_corrections: int = 4, proposals_per_route: int = 1, similarity: str = "auto",
                 dedupe_threshold: float | None = None, support_from_feedback: bool = True,
                 abstract: bool = False, tag_groups: bool = False, unconditional_tag_lessons: bool = False,
                 critic: bool = True, examples: int = 0, examples_k: int = EXAMPLES_PER_CALL,
                 examples_per_iteration: int = 12, examples_cover: bool | str = True,
                 examples_partner: str = "same", example_lessons: bool = False,
                 propagator: PropagatorFactory | None = None):
        """``min_support``: distinct traces a correction needs (``nlgrad optimize --min-support``); ``max_diagnose``:
        failed traces the critic diagnoses per iteration, plus ``contrast_successes`` successes for contrast.
        ``similarity`` decides which corrections are near-duplicates when support is counted: ``"minilm"``
        (embedding cosine, so paraphrases of one correction merge), ``"lexical"`` (word overlap), or ``"auto"``
        (MiniLM when the ``embed`` extra is installed). ``dedupe_threshold`` overrides the backend's default.
        ``support_from_feedback`` also counts, as support of a correction, the failed traces whose own node feedback
        on that route is a near-duplicate of it (see :func:`~nlgrad.methods.nlpg.aggregate.attribute_support`); off,
        only the traces the proposer cited count. ``abstract`` adds general lessons abstracted across a route's
        corrections (one more optimizer call per route with >= 2 distinct corrections). ``tag_groups`` adds one
        lesson per recurring failure tag of the metric (:mod:`~nlgrad.methods.nlpg.tag_lessons`): support is the group's
        task count and the condition its discriminative input patterns; a group that no input pattern separates
        gets no lesson unless ``unconditional_tag_lessons`` (shown to every input, such lessons lost on ifeval x
        1.5B: -0.092 on the gate's 60 dev tasks). ``critic=False`` skips the critic and the
        backward pass (then only tag-group lessons, and examples, are proposed). ``examples`` > 0 also learns worked
        examples from recurring confusions, at most that many per route, each call shown its ``examples_k`` nearest
        as prior turns, at most ``examples_per_iteration`` confusions (two entries each) per iteration, on top of one
        typical example per reply where ``examples_cover`` is true (or ``centroid``); ``examples_cover=fit`` instead
        fills the route up to ``examples`` after the confusions, with the train messages that most often become the
        nearest example of their own label (:mod:`~nlgrad.methods.nlpg.nearest_fit`); ``examples_partner`` says what
        stands next to each failed message: ``same`` (the default: its own label's nearest other message) or
        ``confused`` (a message of the label it was confused with, which misled the agent twice as often where it was
        shown) (:mod:`~nlgrad.methods.nlpg.confusion_examples`; needs a program with ``reference_outputs``).
        ``example_lessons`` adds, per route with example entries, one lesson on how to use them when >=
        ``min_support`` failed tasks were shown an example of the right reply and replied otherwise
        (:mod:`~nlgrad.methods.nlpg.example_use`; needs ``reference_outputs`` too). ``propagator`` (a Python
        argument, not a command-line option) builds the propagator of each critique from the LM
        (:mod:`nlgrad.credit.propagator`); the default is :meth:`default_propagator`, the critic and the backward
        pass."""
        if min_support < 1 or max_diagnose < 1 or contrast_successes < 0:
            raise ConfigError("min_support and max_diagnose must be >= 1, contrast_successes >= 0",
                              field="--method-option", value=f"min_support={min_support}, max_diagnose="
                                                             f"{max_diagnose}, contrast_successes={contrast_successes}")
        self.min_support, self.max_diagnose, self.contrast_successes = min_support, max_diagnose, contrast_successes
        self.similarity, self.dedupe_threshold = similarity, dedupe_threshold
        self.support_from_feedback = support_from_feedback
        self.loop_threshold, self.localized_steps = loop_threshold, localized_steps
        self.max_items, self.max_corrections = max_items, max_corrections
        self.proposals_per_route = proposals_per_route
        self.abstract = abstract
        self.tag_groups, self.use_critic = tag_groups, critic
        self.unconditional_tag_lessons = unconditional_tag_lessons
        self.propagator: PropagatorFactory = propagator or self.default_propagator
        if examples < 0 or examples_k < 1 or examples_per_iteration < 1:
            raise ConfigError("examples must be >= 0, examples_k and examples_per_iteration >= 1",
                              field="--method-option", value=f"examples={examples}, examples_k={examples_k}, "
                                                             f"examples_per_iteration={examples_per_iteration}")
        if examples_partner not in PARTNERS:
            raise ConfigError(f"examples_partner must be one of {', '.join(PARTNERS)}", field="--method-option",
                              value=f"examples_partner={examples_partner}")
        cover = cover_mode(examples_cover)
        if cover is None:
            raise ConfigError(f"examples_cover must be true, false or one of {', '.join(COVERS)}",
                              field="--method-option", value=f"examples_cover={examples_cover}")
        self.examples, self.examples_k = examples, examples_k
        self.example_lessons = example_lessons
        self.example_learner = ConfusionExamples(per_iteration=examples_per_iteration, embedder=similarity,
                                                 cover=cover, partner=examples_partner, bound=examples) \
            if examples else None

    @classmethod
    def estimate_calls(cls, options: dict[str, Any], shape: RunShape) -> dict[str, float]:
        """One iteration: the batch's rollouts and the shared gate; the critic on up to ``max_diagnose`` failures and
        ``contrast_successes`` successes, each a diagnosis plus the backward pass (per route: one localization when
        the route loops more than ``loop_threshold`` calls in a rollout, else one feedback call per call); the
        optimizer's proposals per route (and, with ``abstract`` / ``tag_groups``, one more call per route each)."""
        calls = loop_calls(shape)
        routes = shape.routes
        per_route = shape.calls_per_rollout / routes  # one route's calls in one rollout
        if options["critic"]:
            diagnosed = min(shape.batch, options["max_diagnose"] + options["contrast_successes"])
            backward = routes * (1 if per_route > options["loop_threshold"] else per_route)
            calls["critic"] = diagnosed * (1 + backward)
            calls["optimizer"] = routes * options["proposals_per_route"] + (routes if options["abstract"] else 0)
        if options["tag_groups"]:
            calls["optimizer"] = calls.get("optimizer", 0) + routes
        if options["example_lessons"]:
            calls["optimizer"] = calls.get("optimizer", 0) + EXAMPLE_USE_SAMPLES * routes
        return calls

    def default_propagator(self, lm) -> Propagator:
        """The critic's diagnosis, then the backward pass (with this method's ``loop_threshold`` and
        ``localized_steps``)."""
        return CriticBackward(lm, loop_threshold=self.loop_threshold, localized_steps=self.localized_steps)

    def select_for_diagnosis(self, results: list[TaskResult], max_diagnose: int, contrast: int) -> list[TaskResult]:
        failures = sorted((r for r in results if r.score < 1.0 or not r.success), key=lambda r: (r.score, r.task_id))
        successes = sorted((r for r in results if r.success and r.score >= 1.0), key=lambda r: r.task_id)
        return failures[:max_diagnose] + successes[:contrast]

    def critique(self, lm, results: list[TaskResult], traces: dict, *, max_diagnose: int,
                 contrast: int) -> tuple[dict[str, Any], list[NodeFeedbackRecord], list[dict[str, str]]]:
        """Steps 2-3: the propagator (by default the critic's diagnosis, then the backward pass) gives the selected
        traces' module calls feedback. Traces are independent, so they are propagated side by side
        (``lm.parallelism("critic")``). Returns (diagnoses by task id, records, skipped)."""
        propagator = self.propagator(lm)
        selected = [r for r in self.select_for_diagnosis(results, max_diagnose, contrast)
                    if traces.get(r.task_id) is not None and not r.error]

        def diagnose_and_propagate(result: TaskResult):
            return propagator.propagate(traces[result.task_id], score=result.score, success=result.success,
                                        feedback=result.feedback)

        diagnoses, records = {}, []
        for result, (diagnosis, trace_records) in zip(
                selected, fan_out(diagnose_and_propagate, selected, lm.parallelism("critic"))):
            diagnoses[result.task_id] = diagnosis.model_dump() if diagnosis else None
            records += trace_records
        return diagnoses, records, propagator.skipped

    def propose_corrections(self, lm, records: list[NodeFeedbackRecord], memory: PolicyMemory,
                            instructions: dict[str, str], rejected: dict[str, list[str]],
                            ) -> tuple[list[Candidate], list[dict[str, str]]]:
        """Step 4: per route (and sample), the optimizer turns the route's node feedback into corrections; the
        routes' calls run side by side (``lm.parallelism("optimizer")``). Returns (candidates, skipped)."""
        proposer = CorrectionProposer(lm, max_items=self.max_items, max_corrections=self.max_corrections)
        jobs = [(route, sample) for route in instructions for sample in range(self.proposals_per_route)]

        def propose(job: tuple[str, int]) -> list[Candidate]:
            route, sample = job
            return proposer.propose(route, [r for r in records if r.route == route], memory,
                                    instructions=instructions[route], rejected=rejected.get(route, []),
                                    sample_index=sample)

        candidates = [c for batch in fan_out(propose, jobs, lm.parallelism("optimizer")) for c in batch]
        return candidates, proposer.skipped

    def tag_lessons(self, ws: Workspace, rollouts, instructions: dict[str, str], iteration: int) -> list[Candidate]:
        """One lesson per (route, failure tag) group with at least ``min_support`` tasks, written side by side. The
        writer is not shown the rejected lessons (a small writer copies what it is shown into every group); the
        aggregation drops repeats of them instead."""
        groups = [g for g in group_failures(rollouts.results, rollouts.traces)
                  if g.route in instructions and g.support >= self.min_support]
        inputs = {r.task_id: route_inputs(rollouts.traces[r.task_id])
                  for r in rollouts.results if r.task_id in rollouts.traces}
        writer = TagLessonWriter(ws.lm)

        def write(group: FailureGroup) -> Candidate | None:
            others = [calls[group.route] for task_id, calls in sorted(inputs.items())
                      if task_id not in group.task_ids and group.route in calls]
            return writer.write(group, other_inputs=others, instructions=instructions[group.route],
                                unconditional=self.unconditional_tag_lessons)

        written = fan_out(write, groups, ws.lm.parallelism("optimizer"))
        ws.write(iteration, "tag_groups.json", {
            "groups": [{"route": g.route, "tag": g.tag, "support": g.support, "task_ids": g.task_ids}
                       for g in groups],
            "candidates": [c.to_dict() for c in written if c is not None], "skipped": writer.skipped})
        return [c for c in written if c is not None]

    def example_use_lessons(self, ws: Workspace, memory: PolicyMemory, rollouts, instructions: dict[str, str],
                            iteration: int) -> list[Candidate]:
        """Per route that holds no example-use lesson yet, one lesson from its ignored examples when they recur
        (>= ``min_support`` tasks); written side by side, recorded in ``example_use.json``."""
        tasks = {t.id: t for t in guard_not_test(ws.train_tasks)}
        cases = ignored_examples(ws.program, memory, rollouts, tasks)
        by_route: dict[str, list[IgnoredExample]] = {}
        for case in cases:
            by_route.setdefault(case.route, []).append(case)
        routes = [r for r, found in sorted(by_route.items()) if r in instructions
                  and len({c.task_id for c in found}) >= self.min_support and not has_example_use_lesson(memory, r)]
        writer = ExampleUseLessonWriter(ws.lm)
        written = [c for batch in fan_out(
            lambda route: writer.write_all(route, by_route[route], instructions=instructions[route]), routes,
            ws.lm.parallelism("optimizer")) for c in batch]
        ws.write(iteration, "example_use.json", {"ignored": [vars(c) for c in cases], "routes": routes,
                                                 "candidates": [c.to_dict() for c in written],
                                                 "skipped": writer.skipped})
        return written

    def abstract_candidates(self, ws: Workspace, candidates: list[Candidate], instructions: dict[str, str],
                            specific: set[str], iteration: int) -> list[Candidate]:
        abstractor = CorrectionAbstractor(ws.lm, max_items=self.max_items)
        general = []
        for route in ws.program.routes:
            general += abstractor.abstract(route, candidates, instructions=instructions[route],
                                           instance_specific=specific)
        ws.write(iteration, "abstractions.json", {"general": [c.to_dict() for c in general],
                                                  "dropped": abstractor.dropped, "skipped": abstractor.skipped})
        return general

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        cfg = ws.config
        batch = ws.sampler.sample(ws.train_tasks, cfg.batch, iteration)
        rollouts = ws.rollouts(batch, memory, label="rollouts", iteration=iteration)
        batch_mean = sum(rollouts.scores) / len(rollouts.scores) if rollouts.scores else 0.0
        diagnoses, records, skipped = self.critique(ws.lm, rollouts.results, rollouts.traces,
                                                    max_diagnose=self.max_diagnose, contrast=self.contrast_successes) \
            if self.use_critic else ({}, [], [])
        ws.write(iteration, "diagnoses.json", {"diagnoses": diagnoses, "skipped": skipped})
        ws.write(iteration, "feedback.json", [r.to_dict() for r in records])

        rejected_texts: dict[str, list[str]] = {}
        for rej in ws.store.rejected():
            for op in rej.ops:
                if op.get("text"):
                    rejected_texts.setdefault(op.get("route") or str(op.get("id", "")).split("#")[0], []).append(
                        op["text"])
        instructions = {route: route_instructions(ws.program, route) for route in ws.program.routes}
        candidates, skipped = self.propose_corrections(ws.lm, records, memory, instructions, rejected_texts) \
            if records else ([], [])
        ws.write(iteration, "proposals.json", {"candidates": [c.to_dict() for c in candidates], "skipped": skipped})
        if self.tag_groups:  # tag lessons lead: a critic correction that paraphrases one merges into it
            candidates = self.tag_lessons(ws, rollouts, instructions, iteration) + candidates
        if self.example_lessons:
            candidates = self.example_use_lessons(ws, memory, rollouts, instructions, iteration) + candidates

        specific = workspace_instance_tokens(ws, rollouts.traces.values(), results=rollouts.results,
                                             general_text=" ".join(instructions.values()))
        if self.abstract:
            # general lessons lead, so a specific near-duplicate merges into the general wording, not the reverse
            candidates = self.abstract_candidates(ws, candidates, instructions, specific, iteration) + candidates
        similarity, threshold, backend = correction_similarity(self.similarity, self.dedupe_threshold)
        if self.support_from_feedback:
            candidates = attribute_support(candidates, records, similarity, threshold)
        contradiction = contradiction_threshold(backend)
        ops, agg = aggregate(candidates, min_support=self.min_support, instance_specific=specific,
                             instructions=instructions, similarity=similarity, dedupe_threshold=threshold,
                             contradiction_threshold=contradiction, iteration=iteration, rejected=rejected_texts)
        ws.write(iteration, "aggregate.json", {"kept": agg.kept, "dropped": agg.dropped,
                                               "similarity": backend, "dedupe_threshold": threshold,
                                               "contradiction_threshold": contradiction,
                                               "support_from_feedback": self.support_from_feedback})
        bounds, start = cfg.bounds, memory
        if self.example_learner is not None:
            example_ops, added = self.example_learner.ops(ws, memory, iteration, rollouts, self.min_support)
            ws.write(iteration, "examples.json", added)
            if not added and not ops:
                return Proposal(None, [], None, batch_mean, note="no confusion recurred that the examples miss")
            ops = example_ops + ops
            bounds = with_example_room(cfg.bounds, self.examples, len(example_ops))
            start = memory.model_copy(update={"selection": example_selection(self.examples_k, self.similarity)})
        elif held := held_examples(memory):  # lessons added beside a policy's examples (e.g. --init-policy)
            bounds = with_example_room(cfg.bounds, held, 0)
        if not ops:
            return Proposal(None, [], None, batch_mean, note="no correction had enough support")
        # each op carries the traces of its own lesson; the update adds none, so entries do not share them
        candidate, report = apply_update(start, ops, bounds, UpdateProvenance(source="nlpg", iteration=iteration))
        ws.write(iteration, "update.json", {"ops": [op.model_dump() for op in ops],
                                            "report": report.model_dump(mode="json")})
        if not report.changed:
            return Proposal(None, ops, report, batch_mean, note="every operation was trimmed by the bounds")
        return Proposal(candidate, ops, report, batch_mean, note=report.summary())

