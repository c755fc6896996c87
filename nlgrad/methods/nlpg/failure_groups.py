"""Recurring failures made visible without a critic: group failed rollouts by the metric's failure tags.

A metric may give stable failure tags (``details["tags"]``: ``missed:punctuation:no_comma``,
``answer:sentence_not_span``). Failures are grouped by (route, tag) deterministically: the route is the one whose
call produced the task's output (the last module call of the trace). A group's support is its number of distinct
tasks, so a kind of failure that recurs is counted as such even when a weak critic describes each trace in its own
words. The group also yields the lesson's *condition*: words or phrases that occur in most of the group's inputs and
rarely in the other inputs of the batch (:func:`nlgrad.methods.conditions.discriminative_patterns`), which become
the entry's ``match``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nlgrad.methods.conditions import call_input_text, discriminative_patterns  # noqa: F401  (re-exported)
from nlgrad.runtime.executor import TaskResult
from nlgrad.runtime.trace import Trace


@dataclass
class FailureGroup:
    route: str
    tag: str
    task_ids: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # the route call's input text, per task
    outputs: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)

    @property
    def support(self) -> int:
        return len(set(self.task_ids))


def group_failures(results: list[TaskResult], traces: dict[str, Trace]) -> list[FailureGroup]:
    """Failed tasks (score < 1 or no success) grouped by (route of the output call, failure tag), largest first."""
    groups: dict[tuple[str, str], FailureGroup] = {}
    for result in results:
        if result.error or (result.success and result.score >= 1.0):
            continue
        trace = traces.get(result.task_id)
        calls = trace.module_calls() if trace is not None else []
        if not calls:
            continue
        last = calls[-1]
        for tag in dict.fromkeys((result.details or {}).get("tags") or []):
            group = groups.setdefault((last["route"], tag), FailureGroup(last["route"], tag))
            group.task_ids.append(result.task_id)
            group.inputs.append(call_input_text(last))
            group.outputs.append(str(last.get("output") or ""))
            group.feedback.append(result.feedback)
    return sorted(groups.values(), key=lambda g: (-g.support, g.route, g.tag))
