"""Recurring failures made visible without a critic: group failed rollouts by the metric's failure tags.

A metric may give stable failure tags (``details["tags"]``: ``missed:punctuation:no_comma``,
``answer:sentence_not_span``). Failures are grouped by (route, tag) deterministically: the route is the one whose
call produced the task's output (the last module call of the trace). A group's support is its number of distinct
tasks, so a kind of failure that recurs is counted as such even when a weak critic describes each trace in its own
words. The group also yields the lesson's *condition*: words or phrases that occur in most of the group's inputs and
rarely in the other inputs of the batch (:func:`discriminative_patterns`), which become the entry's ``match``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from nlgrad.runtime.executor import TaskResult
from nlgrad.runtime.trace import Trace

_WORD = re.compile(r"[a-z][a-z'\-]+")
_STOP = frozenset("""a an and are as at be by for from has have in is it its of on or that the this to was were will
with you your yours it's i me my we our they their them he she his her not no do does did can could should would
must make sure also all any each every one two three more than less at least most only very about into out up
write answer response reply question request please following use using what which who whom how why when where
there here then so such these those just like some other""".split())


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


def call_input_text(node: dict) -> str:
    """A module call's inputs as one text (the same text conditional rendering matches patterns against)."""
    return "\n".join(str(v) for v in (node.get("inputs") or {}).values())


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


def _terms(text: str) -> set[str]:
    words = [w for w in _WORD.findall(text.lower())]
    terms = {w for w in words if w not in _STOP and len(w) > 2}
    terms |= {f"{a} {b}" for a, b in zip(words, words[1:]) if a not in _STOP or b not in _STOP}
    return terms


def discriminative_patterns(group_inputs: list[str], other_inputs: list[str], *, max_patterns: int = 3,
                            min_share: float = 0.6, max_other_share: float = 0.25) -> list[str]:
    """Words or two-word phrases found in at least ``min_share`` of the group's inputs and at most
    ``max_other_share`` of the other inputs, most discriminative first; [] when nothing separates the group (the
    lesson is then unconditional). Deterministic: ties break on the shorter, then alphabetical, term."""
    if not group_inputs:
        return []
    inside = Counter(t for text in group_inputs for t in _terms(text))
    outside = Counter(t for text in other_inputs for t in _terms(text))
    n_in, n_out = len(group_inputs), max(1, len(other_inputs))
    scored = []
    for term, count in inside.items():
        share_in, share_out = count / n_in, outside[term] / n_out
        if share_in >= min_share and share_out <= max_other_share:
            scored.append((-(share_in - share_out), len(term), term))
    chosen: list[str] = []
    for _, _, term in sorted(scored):
        if any(term in c or c in term for c in chosen):  # "no comma" after "comma": one is enough
            continue
        chosen.append(term)
        if len(chosen) == max_patterns:
            break
    return chosen
