"""JERP (language half): an experiential rule pool with utilities, retrieved per task, maintained by a reflector.

* **Pool** - the policy memory's rules (see :mod:`nlgrad.methods.rule_pool`), one pool per task family (the store
  is per program and benchmark), each rule with a utility (helpful - harmful).
* **Retrieval at decision time** - each task sees only its top-``k`` rules per route
  (:mod:`nlgrad.runtime.rule_retrieval`). JERP plugs its :class:`Retriever` into the executor's per-task policy
  hook (``Executor(policy_for_task=...)``, set on the workspace by :meth:`JERP.setup`), so rollouts, the shared gate
  and the final test all see retrieved rules; the program is not wrapped.
* **After each batch** - votes from rule presence in successes / failures (rules repeatedly present in failures
  lose utility), a frozen reflector compares each failure (up to ``max_reflect``) with the most similar stored
  successful reference of its family and proposes ADD / EDIT / UPVOTE / DOWNVOTE / MERGE; the update is applied
  under the policy bounds and the pool is pruned to ``capacity`` (lowest utility first). Successes of the batch
  become references (``run/jerp_references.json``).
* **Weight half** - ``iter-NNNN/jerp_batch.jsonl`` lists each rollout (task, family, query, retrieved rule ids,
  score, trace path) and an optional :class:`WeightLearner` gets the same records. ``trainer=CONFIG.toml`` (or an
  inline JSON table of trainer options) asks for the companion trainer's: JERP keeps the options
  (``trainer_options``) and the trainer injects its learner (``nlgrad optimize`` sets ``weight_learner`` to a
  :class:`nlgrad.trainer.weight_learner.TrainerWeightLearner` before :meth:`JERP.setup`, needs ``nlgrad[train]``;
  JERP imports nothing of the trainer). The trained HF model is then the agent, it plays each batch task G times
  (rollouts ``<task>#<g>``), JERP reads those rollouts, and the trainer takes a weight step on the same trajectories
  (advantages from its configured estimator) and checkpoints it under ``run/weights/``, every iteration.

Cost per iteration: ``batch`` rollouts + at most ``max_reflect`` reflector calls + the shared gate (2 x ``--val``
rollouts, none with ``gate="none"``); embedding is local (MiniLM on the CPU, ~40 s to load once).

``gate="val"`` (default) lets the shared paired validation gate accept pool updates; ``gate="none"`` applies every
batch's update unvalidated, as in the original experiential-learning loop.

``check_lessons=True`` (default) drops reflector rules that copy instance details of single tasks or a passage of the
failed trace, its feedback, the reference it was shown or the program's own instructions
(:mod:`nlgrad.methods.lesson_checks`), because such "rules" can pass the gate and still cost on test; the dropped ops
and why are in ``iter-NNNN/reflections.json``.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal, Protocol

from nlgrad.errors import ConfigError, LMCallError, StructuredOutputError
from nlgrad.files import write_text_atomic
from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.estimate import RunShape, loop_calls
from nlgrad.methods.lesson_checks import lesson_problem, lesson_source, workspace_instance_tokens
from nlgrad.methods.prompts import method_module
from nlgrad.methods.rule_pool import (Presence, ReferenceStore, RulePool, apply_pool_update, presence_votes,
                                      reflection_schema, to_policy_ops)
from nlgrad.methods.strategies.acceptance import GateDecision
from nlgrad.policy import PolicyMemory, UpdateProvenance, render_line
from nlgrad.policy.schema import PolicyEntry
from nlgrad.runtime.module import route_instructions
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.rule_retrieval import Retriever, rank_rules, retrieval_selection, retrieved_ids
from nlgrad.runtime.trace import Trace
from nlgrad.text import clip
from nlgrad.text.embeddings import Embedder, cosine, load_embedder

__all__ = ["JERP", "WeightLearner", "trajectory_lines"]

log = logging.getLogger(__name__)


def trajectory_lines(trace: Trace, max_lines: int = 12, chars: int = 90) -> list[str]:
    """A compact account of what the agent did: module outputs (chosen actions) and what followed."""
    lines = []
    for node in trace.nodes():
        if node["kind"] == "module":
            parsed = node.get("parsed")
            said = parsed.get("action") if isinstance(parsed, dict) and parsed.get("action") else node.get("output")
            lines.append(f"{node['route'].split('.')[-1]}: {clip(said, chars)}")
        elif node["kind"] == "env" and node["route"] == "env.step":
            lines.append(f"  -> {clip(node.get('observation', ''), chars)}")
    if len(lines) > max_lines:
        lines = lines[:3] + ["..."] + lines[-(max_lines - 4):]
    return lines


# ------------------------------------------------------------------------------------------------ the method
class WeightLearner(Protocol):
    """Seam for the weight half of JERP: ``on_batch`` is called after each batch with the rollout records of that
    batch (those JERP reflected on), before the pool update is applied.

    Optional, found with ``hasattr``: ``setup(ws)``, called by :meth:`JERP.setup` after the retrieval hook is set
    (e.g. to load a model and make it the workspace's agent); ``rollouts(ws, tasks, memory, *, iteration)`` ->
    ``(RunResult, rollout tasks)``, which plays the batch instead of ``ws.rollouts`` (e.g. G rollouts per task by
    the model being trained, so that the trajectories JERP reads are the ones the weights learn from). The
    companion trainer's implementation is :class:`nlgrad.trainer.weight_learner.TrainerWeightLearner`."""

    def on_batch(self, records: list[dict[str, Any]], ws: Workspace, iteration: int) -> None: ...


class JERP:
    name = "jerp"

    def __init__(self, *, k: int = 4, capacity: int = 16, utility_weight: float = 0.1, min_failures: int = 2,
                 min_utility: int | None = -3, max_reflect: int = 3, max_ops: int = 3, max_references: int = 8,
                 embedder: str = "auto", gate: Literal["val", "none"] = "val", reflect_tokens: int = 320,
                 check_lessons: bool = True, weight_learner: WeightLearner | None = None,
                 trainer: str | dict[str, Any] | None = None):
        if gate not in ("val", "none"):
            raise ValueError(f"gate must be val or none, got {gate!r}")
        if trainer is not None and weight_learner is not None:
            raise ValueError("give JERP a weight_learner or trainer options, not both")
        # the companion trainer's options: the run injects the trainer's weight learner built from them
        self.trainer_options = trainer
        self.k, self.capacity, self.utility_weight = k, capacity, utility_weight
        self.min_failures, self.min_utility = min_failures, min_utility
        self.max_reflect, self.max_ops = max_reflect, max_ops
        self.max_references, self.embedder_kind, self.gate = max_references, embedder, gate
        self.reflect_tokens, self.weight_learner = reflect_tokens, weight_learner
        self.check_lessons = check_lessons
        self.module = method_module("jerp_reflect.j2", "jerp.reflect")
        self.skipped: list[dict[str, str]] = []

    @classmethod
    def estimate_calls(cls, options: dict[str, Any], shape: RunShape) -> dict[str, float]:
        """One iteration: the batch's rollouts (G per task with a trainer: its ``group_size``, 4 unless set), at most
        ``max_reflect`` reflector calls, and the shared gate unless ``gate="none"``."""
        trainer = options["trainer"]
        group = (trainer.get("group_size", 4) if isinstance(trainer, dict) else 4) if trainer is not None else 1
        return {**loop_calls(shape, rollouts=shape.batch * group, gate=options["gate"] != "none"),
                "optimizer": min(options["max_reflect"], shape.batch * group)}

    def setup(self, ws: Workspace) -> None:
        """Called by the optimize loop before any rollout (also on resume): retrieval for every rollout, then the
        weight learner's own setup (the trainer loads or resumes its model and becomes the agent)."""
        if self.trainer_options is not None and self.weight_learner is None:
            raise ConfigError("JERP's trainer option needs the companion trainer's weight learner, which nlgrad "
                              "optimize injects (run_optimize); set weight_learner to use JERP on its own",
                              field="--method-option", value="trainer")
        self.install(ws)
        if self.weight_learner is not None and hasattr(self.weight_learner, "setup"):
            self.weight_learner.setup(ws)

    @property
    def own_agent(self) -> bool:
        """Whether the agent is the weight learner's model, not the configured agent role (the optimize loop then
        does not check that role's model)."""
        return self.weight_learner is not None and hasattr(self.weight_learner, "rollouts")

    def install(self, ws: Workspace) -> Embedder:
        """Set the workspace's per-task policy hook to a :class:`Retriever` (idempotent); return its embedder."""
        if not isinstance(ws.policy_for_task, Retriever):
            ws.policy_for_task = Retriever(load_embedder(self.embedder_kind), k=self.k,
                                           utility_weight=self.utility_weight)
        return ws.policy_for_task.embedder

    @staticmethod
    def family(ws: Workspace, task: Task) -> str:
        sub = task.meta.get("family") or task.meta.get("type")
        return f"{ws.benchmark.id}/{sub}" if sub else str(ws.benchmark.id)

    def reflect(self, ws: Workspace, memory: PolicyMemory, *, task: Task, trace: Trace, result, query: str,
                references: list[dict[str, Any]], embedder: Embedder, specific: set[str] | None = None,
                instructions: list[str] = ()) -> tuple[list[Any], list[dict[str, Any]]]:
        pool = RulePool(memory)
        reference = None
        if references:
            vectors = embedder.embed([query] + [r["query"] for r in references])
            best = max(range(len(references)), key=lambda i: (cosine(vectors[0], vectors[i + 1]), -i))
            reference = {"task": clip(references[best]["query"], 200), "lines": references[best]["lines"]}
        seen = list(dict.fromkeys(retrieved_ids(trace)))

        def view(e: PolicyEntry) -> dict[str, Any]:
            return {"id": e.id, "utility": e.utility, "line": render_line(e)[2:]}

        retrieved = [view(pool.get(i)[1]) for i in seen if pool.get(i)]
        others = [view(e) for route in ws.program.routes for e, _ in
                  rank_rules(query, [r for r in pool.rules(route) if r.id not in seen], embedder, k=4)]
        messages = self.module.render("", {
            "score": f"{result.score:.2f}", "failure": {"task": clip(query, 200), "lines": trajectory_lines(trace)},
            "feedback": clip(result.feedback, 400), "reference": reference, "retrieved": retrieved,
            "others": others, "max_ops": self.max_ops, "routes": ws.program.routes})
        try:
            reply = ws.lm.structured("optimizer", messages, reflection_schema(tuple(ws.program.routes)),
                                     max_tokens=self.reflect_tokens)
        except (StructuredOutputError, LMCallError) as exc:
            log.warning("jerp reflection on %s skipped: %s", result.task_id, exc)
            self.skipped.append({"task_id": result.task_id, "reason": str(exc)[:500]})
            return [], []
        routes = list(ws.program.routes)
        # the reflector copies the reference too; restating the prompt's own instructions teaches nothing either
        shown = [reference["task"], *reference["lines"]] if reference else []
        source = lesson_source(trace, result.feedback, [*shown, *instructions])
        check = (lambda text: lesson_problem(text, specific=specific or set(), source=source,
                                             instructions=" ".join(instructions))) if self.check_lessons else None
        return to_policy_ops(reply.ops[: self.max_ops], pool, routes=routes, trace_ids=[result.task_id],
                             default_route=routes[0] if len(routes) == 1 else None, text_problem=check)

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        cfg = ws.config
        embedder = self.install(ws)
        batch = ws.sampler.sample(ws.train_tasks, cfg.batch, iteration)
        if self.own_agent:  # the weight learner plays the batch (G rollouts per task by the model it trains)
            rollouts, played = self.weight_learner.rollouts(ws, batch, memory, iteration=iteration)
        else:
            rollouts, played = ws.rollouts(batch, memory, label="rollouts", iteration=iteration), batch
        by_id = {t.id: t for t in played}
        batch_mean = sum(rollouts.scores) / len(rollouts.scores) if rollouts.scores else 0.0
        refs = ReferenceStore(ws.work_dir / "jerp_references.json", max_per_family=self.max_references)

        records, presence = [], []
        for r in rollouts.results:
            trace = rollouts.traces.get(r.task_id)
            info = trace.graph.graph.get("jerp", {}) if trace is not None else {}
            records.append({"task_id": r.task_id, "family": self.family(ws, by_id[r.task_id]),
                            "query": info.get("query", ""), "retrieved": info.get("retrieved", {}),
                            "score": r.score, "success": r.success, "error": r.error,
                            "trace": f"{ws.iteration_dir(iteration).name}/rollouts/traces"})
            if "rollout_of" in by_id[r.task_id].meta:  # one of G rollouts of a task
                records[-1]["rollout_of"] = by_id[r.task_id].meta["rollout_of"]
            if trace is not None and not r.error:
                presence.append(Presence(r.task_id, r.success, retrieved_ids(trace)))
        votes = presence_votes(presence, min_failures=self.min_failures)

        reflected, dropped = [], []
        instructions = [route_instructions(ws.program, r) for r in ws.program.routes] if self.check_lessons else []
        specific = workspace_instance_tokens(ws, rollouts.traces.values(), results=rollouts.results,
                                             general_text=" ".join(instructions)) \
            if self.check_lessons else set()
        failures = sorted((r for r in rollouts.results if not r.success and not r.error
                           and r.task_id in rollouts.traces), key=lambda r: (r.score, r.task_id))
        failures = _distinct_tasks_first(failures, by_id)
        current = {}
        for rec, r in zip(records, rollouts.results):
            if r.success and r.task_id in rollouts.traces:
                lines = trajectory_lines(rollouts.traces[r.task_id])
                current.setdefault(rec["family"], []).append({"task_id": r.task_id, "query": rec["query"],
                                                              "lines": lines})
        for r in failures[: self.max_reflect]:
            rec = next(x for x in records if x["task_id"] == r.task_id)
            references = refs.before(rec["family"], iteration) + current.get(rec["family"], [])
            ops, drop = self.reflect(ws, memory, task=by_id[r.task_id], trace=rollouts.traces[r.task_id], result=r,
                                     query=rec["query"], references=references, embedder=embedder,
                                     specific=specific, instructions=instructions)
            reflected += ops
            dropped += drop
        for family, items in current.items():
            for item in items:
                refs.add(family, item, iteration)
        refs.save()

        ws.write(iteration, "reflections.json", {"votes": [v.model_dump() for v in votes],
                                                 "ops": [o.model_dump() for o in reflected], "dropped": dropped,
                                                 "skipped": list(self.skipped)})
        _write_jsonl(ws, iteration, records)
        if self.weight_learner is not None:
            self.weight_learner.on_batch(records, ws, iteration)
        ops = votes + reflected
        candidate, report, prune = apply_pool_update(
            memory, ops, bounds=cfg.bounds, capacity=self.capacity, min_utility=self.min_utility,
            provenance=UpdateProvenance(source="jerp", iteration=iteration,
                                        trace_ids=sorted({t for op in ops for t in op.trace_ids})))
        ws.write(iteration, "update.json", {"ops": [op.model_dump() for op in ops],
                                            "report": report.model_dump(mode="json"),
                                            "prune": prune.model_dump(mode="json")})
        if not (report.changed or prune.changed):
            return Proposal(None, ops, report, batch_mean, note="the pool did not change")
        # the policy file says how its rules are chosen, so eval and `policy render --for-input` retrieve as JERP did
        candidate.selection = retrieval_selection(self.install(ws), k=self.k, utility_weight=self.utility_weight)
        decision = None
        if self.gate == "none":
            decision = GateDecision(True, 0.0, (0.0, 0.0), 0, 0, batch_mean, batch_mean,
                                    "gate=none: JERP applies every batch's pool update")
        note = report.summary() + (f"; pruned {len(prune.applied)}" if prune.applied else "")
        return Proposal(candidate, ops + [a.op for a in prune.applied], report, batch_mean, note=note,
                        gate_decision=decision)


def _distinct_tasks_first(failures: list, by_id: dict[str, Task]) -> list:
    """``failures`` (in order) with each task's first failed rollout before any task's second, and so on, so that
    the reflector sees several tasks when a task was played G times (a batch of single rollouts is unchanged)."""
    seen: dict[str, int] = {}
    ranked = []
    for position, r in enumerate(failures):
        task = by_id[r.task_id].meta.get("rollout_of", r.task_id)
        ranked.append((seen.get(task, 0), position, r))
        seen[task] = seen.get(task, 0) + 1
    return [r for _, _, r in sorted(ranked, key=lambda x: (x[0], x[1]))]


def _write_jsonl(ws: Workspace, iteration: int, records: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)
    write_text_atomic(ws.iteration_dir(iteration) / "jerp_batch.jsonl", text)
