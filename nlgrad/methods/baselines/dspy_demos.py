"""A DSPy rendering of an nlgrad program whose predictors' **demos** are policy-memory ``example`` entries.

For DSPy's BootstrapFewShot family (:mod:`nlgrad.methods.baselines.bootstrap_fewshot`). As in
:mod:`nlgrad.methods.baselines.dspy_render`, :func:`render_demo_program` builds a ``dspy.Module`` with one
``dspy.Predict`` per route whose ``forward(task_id, task)`` never calls the predictors: it turns every predictor's
current ``demos`` into ``example`` entries added to the starting policy (:func:`memory_from_examples`, plain code
through :func:`nlgrad.policy.apply_update`) and runs the *nlgrad* program on that task through
``Workspace.rollouts``. A run on a train task (how BootstrapFewShot collects demos) also appends each recorded
module call of the nlgrad trace to DSPy's trace as ``(predictor, inputs, Prediction(reply=...))``, so what DSPy
bootstraps is a real call of the frozen agent: the module's template values -> its reply, tagged with the train task
and the rollout folder it came from (``nlgrad_task``, ``nlgrad_rollout``), which become the entry's provenance.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from nlgrad.methods.baselines.common import BASELINE_BOUNDS, candidate_key
from nlgrad.methods.baselines.dspy_render import predictor_name, template_fields
from nlgrad.policy import AddOp, EntryKind, PolicyMemory, UpdateProvenance, apply_update
from nlgrad.policy.examples import DEFAULT_FIELD_CHARS, format_example
from nlgrad.runtime.module import route_modules

_META = ("reply", "nlgrad_task", "nlgrad_rollout", "augmented")


@dataclass(frozen=True)
class WorkedExample:
    """One demo as nlgrad keeps it: the route, the entry text, and the train task / rollout it came from."""

    route: str
    text: str
    task_id: str
    rollout: str

    @property
    def trace_id(self) -> str:
        return f"{self.rollout}/{self.task_id}" if self.rollout else self.task_id


def demo_to_example(route: str, demo: Any, *, field_chars: int = DEFAULT_FIELD_CHARS) -> WorkedExample:
    """A DSPy demo (``dspy.Example`` with the module's input fields and ``reply``) as a :class:`WorkedExample`;
    input fields in name order, so the text is the same whether the trace was fresh or reloaded from disk."""
    data = dict(demo.items()) if hasattr(demo, "items") else dict(demo)
    inputs = {k: data[k] for k in sorted(data) if k not in _META}
    text = format_example(inputs, data.get("reply", ""), field_chars=field_chars)
    return WorkedExample(route, text, str(data.get("nlgrad_task", "")), str(data.get("nlgrad_rollout", "")))


def candidate_texts(examples: dict[str, list[WorkedExample]]) -> dict[str, list[str]]:
    """``{route: [entry text, ...]}`` (routes with examples only): what names a candidate's rollout folders."""
    return {route: [e.text for e in items] for route, items in sorted(examples.items()) if items}


def memory_from_examples(base: PolicyMemory, examples: dict[str, list[WorkedExample]], *, source: str,
                         iteration: int | None = None):
    """``(memory, ops, report)``: ``base`` with one ``example`` entry added per worked example (in DSPy's order),
    applied by :func:`apply_update` under the baselines' bounds (so a route's entry, token and example limits hold;
    an identical example is merged, not repeated)."""
    ops = [AddOp(route=e.route, text=e.text, kind=EntryKind.example, trace_ids=[e.trace_id],
                 reason=f"{source}: a successful rollout of train task {e.task_id}")
           for route in sorted(examples) for e in examples[route]]
    if not ops:
        return base, [], None
    memory, report = apply_update(base, ops, BASELINE_BOUNDS, UpdateProvenance(source=source, iteration=iteration))
    return memory, ops, report


class RolloutLog:
    """What the DSPy program ran, shared by its threads: distinct rollouts (``(folder, task)``; a rerun of the same
    candidate on the same task is read back from disk, so it is not counted again) and each one's score."""

    def __init__(self):
        self._lock = threading.Lock()
        self.scores: dict[tuple[str, str], float] = {}

    def add(self, label: str, task_id: str, score: float) -> None:
        with self._lock:
            self.scores[(label, task_id)] = score

    @property
    def rollouts(self) -> int:
        return len(self.scores)

    def scores_for(self, label_of, tasks) -> list[float]:
        """Per-task scores, in ``tasks`` order, of the candidate whose folder for a task is ``label_of(task_id)``."""
        return [self.scores.get((label_of(t.id), t.id), 0.0) for t in tasks]


def rollout_label(texts: dict[str, list[str]], task_id: str) -> str:
    return f"bfs-{candidate_key(texts, [task_id])}"  # type: ignore[arg-type] - lists of texts hash the same way


def render_demo_program(ws, *, base: PolicyMemory, iteration: int, log: RolloutLog, source: str,
                        field_chars: int = DEFAULT_FIELD_CHARS):
    """``(dspy.Module, {predictor name: route})`` for the workspace's program (see the module docstring)."""
    from nlgrad.methods.baselines.dspy_render import _dspy

    dspy = _dspy()
    modules = route_modules(ws.program)
    tasks = {t.id: t for t in list(ws.train_tasks) + list(ws.val_tasks)}
    train_ids = {t.id for t in ws.train_tasks}
    route_map = {predictor_name(r): r for r in ws.program.routes}

    class NlgradDemoProgram(dspy.Module):
        def __init__(self):
            super().__init__()
            for name, route in route_map.items():
                fields = template_fields(modules[route]) if route in modules else ["inputs"]
                setattr(self, name, dspy.Predict(dspy.Signature(", ".join(fields) + " -> reply")))

        def examples(self) -> dict[str, list[WorkedExample]]:
            return {route: [demo_to_example(route, d, field_chars=field_chars) for d in getattr(self, name).demos]
                    for name, route in route_map.items()}

        def forward(self, task_id: str, task: str = ""):  # noqa: ARG002 - the task text is for DSPy's logs
            examples = self.examples()
            memory, _, _ = memory_from_examples(base, examples, source=source, iteration=iteration)
            label = rollout_label(candidate_texts(examples), task_id)
            on_train = task_id in train_ids
            result = ws.rollouts([tasks[task_id]], memory, label=label, iteration=iteration, keep_traces=on_train)
            r = result.results[0]
            log.add(label, task_id, float(r.score))
            trace = result.traces.get(task_id) if on_train else None
            if trace is not None:
                self._record(trace, task_id, label)
            return dspy.Prediction(reply=str(r.output), score=float(r.score), feedback=r.feedback)

        def _record(self, trace, task_id: str, label: str) -> None:
            watched = dspy.settings.trace
            if watched is None:
                return
            for call in trace.module_calls():
                name = predictor_name(call.get("route", ""))
                if name not in route_map or call.get("error") or call.get("output") is None:
                    continue
                watched.append((getattr(self, name), dict(call.get("inputs") or {}),
                                dspy.Prediction(reply=str(call["output"]), nlgrad_task=task_id,
                                                nlgrad_rollout=label)))

    return NlgradDemoProgram(), route_map
