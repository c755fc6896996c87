"""GEPA (the ``gepa`` package) optimizing the route texts of the same program through nlgrad's executor.

:class:`NlgradGEPAAdapter` implements ``gepa.core.adapter.GEPAAdapter``:

- ``evaluate(batch, candidate, capture_traces)``: the candidate ``{route: text}`` becomes policy memory (one ``rule``
  entry per changed route, see :mod:`nlgrad.methods.baselines.common`) and the batch of nlgrad tasks is run by
  ``Workspace.rollouts`` (the same executor, templates, model, LM cache, rollout folders and counters as every
  method); scores are the benchmark metric's.
- ``make_reflective_dataset``: per route, records built from nlgrad traces: the module call's rendered user message
  (``Inputs``), its raw reply (``Generated Outputs``) and the task's score with the metric's feedback (``Feedback``);
  failures first, the last ``steps_per_trace`` calls of a route per trace (interactive episodes have many).

The reflection LM is nlgrad's ``LM`` for the ``optimizer`` role (``LM.complete`` wrapped as GEPA's
``reflection_lm`` callable), so it is the same litellm model string as nlgrad's optimizer, cached and counted in
the same ledger. Budget: GEPA's ``max_metric_calls`` counts one rollout per task evaluation, the same unit as
nlgrad's rollout count. Across nlgrad iterations GEPA resumes from its own ``run/gepa`` state folder; iteration
``i`` lets GEPA run until ``i * metric_calls_per_iteration`` metric calls (capped by ``max_metric_calls``), then
proposes GEPA's best candidate by its own validation aggregate (GEPA selects on ``ws.val_tasks``, so its decision
is passed to the loop as the proposal's ``gate_decision``; nlgrad's gate is not applied on top).
"""

from __future__ import annotations

import json
from typing import Any

from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.baselines.common import (candidate_key, memory_from_candidate, require,
                                             same_policy, seed_candidate)
from nlgrad.methods.estimate import ROLLOUTS, RunShape
from nlgrad.methods.strategies.acceptance import GateDecision
from nlgrad.policy import PolicyMemory
from nlgrad.text import clip


class ReflectionLM:
    """GEPA's ``reflection_lm`` callable: one nlgrad ``LM.complete`` call for the optimizer role."""

    def __init__(self, lm, *, role: str = "optimizer", max_tokens: int | None = None):
        self.lm, self.role, self.max_tokens = lm, role, max_tokens
        self.calls = 0

    def __call__(self, prompt: str | list[dict[str, Any]]) -> str:
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        self.calls += 1
        return self.lm.complete(self.role, messages, max_tokens=self.max_tokens).text


class FileLogger:
    """GEPA's logger protocol (``log(message)``), appending to a file instead of printing."""

    def __init__(self, path):
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def log(self, message: str) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"{message}\n")


class NlgradGEPAAdapter:
    """``GEPAAdapter[Task, dict, dict]`` over nlgrad's executor (structural: GEPAAdapter is a Protocol)."""

    propose_new_texts = None  # use GEPA's own reflective instruction proposer

    def __init__(self, ws: Workspace, *, base: PolicyMemory, seed: dict[str, str], iteration: int,
                 steps_per_trace: int = 2, max_records: int = 6, max_chars: int = 1200):
        self.ws, self.base, self.seed, self.iteration = ws, base, seed, iteration
        self.steps_per_trace, self.max_records, self.max_chars = steps_per_trace, max_records, max_chars
        self.rollouts = 0

    def policy(self, candidate: dict[str, str]) -> PolicyMemory:
        memory, _, _ = memory_from_candidate(self.base, candidate, self.seed, source="gepa",
                                             iteration=self.iteration)
        return memory

    def evaluate(self, batch, candidate: dict[str, str], capture_traces: bool = False):
        from gepa.core.adapter import EvaluationBatch

        tasks = list(batch)
        label = f"gepa-{candidate_key(candidate, [t.id for t in tasks])}"
        result = self.ws.rollouts(tasks, self.policy(candidate), label=label, iteration=self.iteration,
                                  keep_traces=capture_traces)
        self.rollouts += len(tasks)
        by_id = {r.task_id: r for r in result.results}
        outputs, scores, trajectories = [], [], []
        for task in tasks:
            r = by_id.get(task.id)
            score = r.score if r else 0.0
            feedback = (r.feedback if r else "the task produced no result") or ""
            outputs.append({"task_id": task.id, "output": r.output if r else None, "score": score,
                            "feedback": feedback})
            scores.append(float(score))
            trajectories.append({"task_id": task.id, "score": score, "feedback": feedback,
                                 "error": r.error if r else "no result", "trace": result.traces.get(task.id)})
        return EvaluationBatch(outputs=outputs, scores=scores, trajectories=trajectories if capture_traces else None)

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch, components_to_update: list[str]):
        trajectories = sorted(eval_batch.trajectories or [], key=lambda t: (t["score"], t["task_id"]))
        dataset: dict[str, list[dict[str, Any]]] = {}
        for route in components_to_update:
            records: list[dict[str, Any]] = []
            for traj in trajectories:
                trace = traj.get("trace")
                calls = trace.module_calls(route) if trace is not None else []
                feedback = f"Task score {traj['score']:.2f} (1.0 is perfect). {traj['feedback']}"
                if traj.get("error"):
                    feedback += f" The program raised: {traj['error']}"
                for call in calls[-self.steps_per_trace:]:
                    messages = call.get("messages") or []
                    user = messages[-1]["content"] if messages else call.get("inputs", "")
                    if not isinstance(user, str):  # the call's inputs, when no message was recorded
                        user = json.dumps(user, ensure_ascii=False, default=str)
                    records.append({"Inputs": clip(user, self.max_chars, squash=False),
                                    "Generated Outputs": clip(call.get("output") or call.get("error") or "", 400,
                                                              squash=False),
                                    "Feedback": clip(feedback, 800, squash=False)})
                if len(records) >= self.max_records:
                    break
            if not records:
                records.append({"Inputs": "(this step was not reached in these examples)", "Generated Outputs": "",
                                "Feedback": "; ".join(clip(t["feedback"], 300, squash=False)
                                                      for t in trajectories[:3])})
            dataset[route] = records[: self.max_records]
        return dataset


class GEPA:
    """``--method gepa``: the gepa package's optimizer on the program's route texts (see the module docstring)."""

    name = "gepa"
    reference = True  # nlgrad compare may take it as the reference row (the strongest baseline)
    budget_option = "max_metric_calls"  # compare passes its rollout budget as this option

    def __init__(self, *, max_metric_calls: int | None = None, metric_calls_per_iteration: int | None = None,
                 reflection_minibatch_size: int = 3, candidate_selection_strategy: str = "pareto",
                 module_selector: str = "round_robin", use_merge: bool = False, steps_per_trace: int = 2,
                 max_records: int = 6, reflection_max_tokens: int | None = None):
        self.max_metric_calls, self.per_iteration = max_metric_calls, metric_calls_per_iteration
        self.minibatch, self.selection = reflection_minibatch_size, candidate_selection_strategy
        self.module_selector = module_selector
        self.use_merge, self.steps_per_trace, self.max_records = use_merge, steps_per_trace, max_records
        self.reflection_max_tokens = reflection_max_tokens

    @classmethod
    def estimate_calls(cls, options: dict[str, Any], shape: RunShape) -> dict[str, float]:
        """One iteration: GEPA's metric calls (rollouts; ``metric_calls_per_iteration``, default ``batch`` + 2 x
        ``val``) and about one reflection per two minibatches they evaluate; GEPA selects itself (no shared gate)."""
        step = options["metric_calls_per_iteration"] or shape.batch + 2 * shape.val
        if options["max_metric_calls"]:
            step = min(step, options["max_metric_calls"] / max(1, shape.iterations))
        return {ROLLOUTS: shape.rollouts(step),
                "optimizer": step / (2 * max(1, options["reflection_minibatch_size"]))}

    def target_calls(self, ws: Workspace, iteration: int) -> int:
        step = self.per_iteration or (ws.config.batch + 2 * len(ws.val_tasks))
        target = step * iteration
        return min(target, self.max_metric_calls) if self.max_metric_calls else target

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        gepa = require("gepa", "gepa", self.name)
        initial = ws.store.load(ws.store.versions()[0])
        seed = seed_candidate(ws.program, initial)
        adapter = NlgradGEPAAdapter(ws, base=initial, seed=seed, iteration=iteration,
                                    steps_per_trace=self.steps_per_trace, max_records=self.max_records)
        reflection = ReflectionLM(ws.lm, max_tokens=self.reflection_max_tokens)
        run_dir = ws.work_dir / "gepa"
        target = self.target_calls(ws, iteration)
        result = gepa.optimize(
            seed_candidate=seed, trainset=list(ws.train_tasks), valset=list(ws.val_tasks), adapter=adapter,
            reflection_lm=reflection, candidate_selection_strategy=self.selection,
            reflection_minibatch_size=self.minibatch, module_selector=self.module_selector, use_merge=self.use_merge,
            max_metric_calls=target, run_dir=str(run_dir), logger=FileLogger(run_dir / "run_log.txt"),
            seed=ws.config.seed, display_progress_bar=False,
            raise_on_exception=True)
        best_idx = result.best_idx
        best = dict(result.best_candidate)
        scores = list(result.val_aggregate_scores)
        candidate, ops, report = memory_from_candidate(memory, best, seed, source="gepa", iteration=iteration,
                                                       initial=initial)
        current_idx = next((i for i, c in enumerate(result.candidates)
                            if same_policy(adapter.policy(dict(c)), memory, ws.program.routes)), 0)
        ws.write(iteration, "gepa.json", {
            "target_metric_calls": target, "total_metric_calls": result.total_metric_calls,
            "rollouts_this_iteration": adapter.rollouts, "reflection_calls": reflection.calls,
            "best_idx": best_idx, "current_idx": current_idx, "val_aggregate_scores": scores,
            "candidates": [dict(c) for c in result.candidates], "parents": result.parents})
        batch_mean = scores[best_idx] if scores else None
        if same_policy(candidate, memory, ws.program.routes):
            return Proposal(None, [], None, batch_mean,
                            note=f"GEPA's best candidate is unchanged ({len(scores)} candidates, "
                                 f"{result.total_metric_calls} metric calls)")
        current_score = scores[current_idx] if current_idx < len(scores) else 0.0
        decision = GateDecision.self_selected(scores[best_idx], current_score,
                                              f"GEPA's own selection: candidate {best_idx} has the best validation "
                                              f"aggregate of {len(scores)}", gepa_best_idx=best_idx)
        candidate = candidate.model_copy(update={"version": 0, "parent": memory.version or None})
        return Proposal(candidate, ops, report, batch_mean, note=f"GEPA candidate {best_idx}",
                        gate_decision=decision)
