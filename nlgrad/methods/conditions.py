"""A lesson's condition, written the same way by every method: the input patterns of the failures it came from.

A method that turns failures into a policy entry (NLPG's failure-tag lessons, DMRL's document sections, JERP's
rules) knows which failed tasks the entry answers. Its condition is what separates those tasks' inputs from the other
inputs of the batch: words or two-word phrases found in most of the source inputs and rarely in the others
(:func:`discriminative_patterns`). They become the entry's ``match``, and rendering shows the entry only to calls
whose input matches (:mod:`nlgrad.policy.relevance`). An entry from fewer than ``min_sources`` failures stays
unconditional: a pattern read off one task names that task, not a kind of task.
"""

from __future__ import annotations

import re
from collections import Counter

from nlgrad.runtime.trace import Trace

_WORD = re.compile(r"[a-z][a-z'\-]+")
_STOP = frozenset("""a an and are as at be by for from has have in is it its of on or that the this to was were will
with you your yours it's i me my we our they their them he she his her not no do does did can could should would
must make sure also all any each every one two three more than less at least most only very about into out up
write answer response reply question request please following use using what which who whom how why when where
there here then so such these those just like some other""".split())


def call_input_text(node: dict) -> str:
    """A module call's inputs as one text (the same text conditional rendering matches patterns against)."""
    return "\n".join(str(v) for v in (node.get("inputs") or {}).values())


def route_inputs(trace: Trace | None) -> dict[str, str]:
    """Each route's input text in one trace (its last call's, the call that shaped the outcome most directly)."""
    return {n["route"]: call_input_text(n) for n in trace.module_calls()} if trace is not None else {}


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


def lesson_condition(source_inputs: list[str], other_inputs: list[str], *, min_sources: int = 2) -> list[str]:
    """The ``match`` of an entry written from the failures whose inputs are ``source_inputs`` ([] = unconditional):
    distinct source inputs below ``min_sources`` give no condition."""
    sources = list(dict.fromkeys(t for t in source_inputs if t.strip()))
    if len(sources) < min_sources:
        return []
    others = [t for t in other_inputs if t not in set(sources)]
    return discriminative_patterns(sources, others)
