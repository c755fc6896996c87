"""Step 5 of NLPG: aggregate candidate corrections across a minibatch into policy operations.

Per route: drop candidates that copy instance details, narrate the runs, restate the route's own instructions or
repeat a lesson the gate already rejected on that route; merge near-duplicates
(their supporting traces are joined); keep only candidates supported by at least ``min_support`` distinct traces
(recurring failures); resolve contradictions (near-duplicates where exactly one is negated) toward the
better-supported side, dropping both on a tie; then emit ``add`` / ``edit`` operations ordered by support (the order
in which bounds trim them). Before that, NLPG may credit each candidate with the failed traces whose own node
feedback says the same thing (:func:`attribute_support`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from nlgrad.methods.lesson_checks import (condition_problem, copied_instance_details, copied_passage, narrated_runs,
                                          script_problem)
from nlgrad.methods.nlpg.proposals import Candidate
from nlgrad.policy import AddOp, EditOp, LexicalSimilarity, Similarity

_NEGATION = re.compile(r"\b(?:not|never|no|avoid|don't|do not|stop|without)\b", re.I)


@dataclass
class AggregateReport:
    kept: list[dict] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)

    def drop(self, candidate: Candidate, reason: str) -> None:
        self.dropped.append({**candidate.to_dict(), "reason": reason})


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def merge_duplicates(candidates: list[Candidate], similarity: Similarity, threshold: float) -> list[Candidate]:
    """Greedy, order-preserving clustering: a candidate joins the first earlier cluster it near-duplicates."""
    clusters: list[Candidate] = []
    for cand in candidates:
        for head in clusters:
            if head.route == cand.route and head.replaces == cand.replaces and \
                    _negated(head.line) == _negated(cand.line) and \
                    similarity.similarity(head.line, cand.line) >= threshold:
                head.trace_ids = sorted(set(head.trace_ids) | set(cand.trace_ids))
                head.notes.append(f"merged near-duplicate: {cand.text}")
                break
        else:
            clusters.append(replace(cand, trace_ids=sorted(set(cand.trace_ids)), notes=list(cand.notes),
                                    match=list(cand.match)))
    return clusters


def attribute_support(candidates: list[Candidate], records: list, similarity: Similarity,
                      threshold: float) -> list[Candidate]:
    """Support from the evidence, not only from the proposer's citations.

    The proposer reads the pooled feedback of a route and cites the items behind each correction; a small optimizer
    often cites one item although several failed traces got the same feedback. Here a candidate is also supported
    by every *failed* trace (score < 1 or no success) with a feedback record on the same route whose feedback or
    suggestion is a near-duplicate of the correction (``similarity >= threshold``). Corrections built from one
    task's details stay at support 1, since no other trace's feedback repeats them. ``records`` are the backward
    pass's :class:`~nlgrad.credit.backward.NodeFeedbackRecord`."""
    out = []
    for cand in candidates:
        line, support = cand.line, set(cand.trace_ids)
        notes = list(cand.notes)
        best: dict[str, float] = {}
        for rec in records:
            if rec.route != cand.route or rec.trace_id in support or (rec.success and rec.score >= 1.0):
                continue
            score = max(similarity.similarity(line, rec.suggestion or ""), similarity.similarity(line, rec.feedback))
            if score >= threshold:
                best[rec.trace_id] = max(best.get(rec.trace_id, 0.0), score)
        for trace_id, score in sorted(best.items()):
            notes.append(f"supported by the feedback of {trace_id} (similarity {score:.2f})")
        out.append(replace(cand, trace_ids=sorted(support | set(best)), notes=notes, match=list(cand.match)))
    return out


def resolve_contradictions(candidates: list[Candidate], similarity: Similarity, threshold: float,
                           report: AggregateReport) -> list[Candidate]:
    losers: set[int] = set()
    for i, a in enumerate(candidates):
        for j in range(i + 1, len(candidates)):
            b = candidates[j]
            if a.route != b.route or _negated(a.line) == _negated(b.line):
                continue
            if similarity.similarity(_NEGATION.sub(" ", a.line), _NEGATION.sub(" ", b.line)) < threshold:
                continue
            if a.support > b.support:
                losers.add(j)
                report.drop(b, f"contradicts a better-supported correction: {a.text}")
            elif b.support > a.support:
                losers.add(i)
                report.drop(a, f"contradicts a better-supported correction: {b.text}")
            else:
                losers |= {i, j}
                report.drop(a, f"contradiction with equal support, both dropped: {b.text}")
                report.drop(b, f"contradiction with equal support, both dropped: {a.text}")
    return [c for k, c in enumerate(candidates) if k not in losers]


def aggregate(candidates: list[Candidate], *, min_support: int = 2, instance_specific: set[str] | None = None,
              similarity: Similarity | None = None, dedupe_threshold: float = 0.6,
              contradiction_threshold: float = 0.6, iteration: int | None = None,
              instructions: dict[str, str] | None = None, rejected: dict[str, list[str]] | None = None,
              ) -> tuple[list[AddOp | EditOp], AggregateReport]:
    """``instructions`` maps a route to its module's own instructions: a candidate that is mostly a verbatim passage
    of them (:func:`copied_passage`) adds nothing to the prompt and is dropped. ``rejected`` maps a route to the
    texts of lessons the gate rejected before: a candidate whose text near-duplicates one of them
    (``similarity >= dedupe_threshold``) is dropped, so a rejected lesson is not gated again under another
    condition."""
    similarity = similarity or LexicalSimilarity()
    report = AggregateReport()

    def drop_reason(cand: Candidate) -> str | None:
        """The first check ``cand`` fails, in order; later (costlier) checks run only if the earlier pass."""
        if problem := script_problem(cand.line, (instructions or {}).get(cand.route, "")):
            return problem
        if copied := copied_instance_details(cand.line, instance_specific or set()):
            return f"copies instance details: {', '.join(copied)}"
        if narration := narrated_runs(cand.line):
            return f"narrates the runs instead of stating a lesson: {narration!r}"
        if problem := condition_problem(cand.when, [cand.route, *(instructions or {})]):
            return problem
        for text in (rejected or {}).get(cand.route, []):
            if similarity.similarity(cand.text, text) >= dedupe_threshold:
                return f"repeats a lesson the gate rejected: {text}"
        if restated := copied_passage(cand.text, (instructions or {}).get(cand.route, "")):
            return f"restates the route's own instructions: {restated!r}"
        return None

    general = []
    for cand in candidates:
        reason = drop_reason(cand)
        if reason:
            report.drop(cand, reason)
        else:
            general.append(cand)
    merged = merge_duplicates(general, similarity, dedupe_threshold)
    resolved = resolve_contradictions(merged, similarity, contradiction_threshold, report)
    supported = []
    for cand in resolved:
        if cand.support < min_support:
            report.drop(cand, f"support {cand.support} < min_support {min_support} (not a recurring failure)")
        else:
            supported.append(cand)
    supported.sort(key=lambda c: (-c.support, c.route, c.text))
    ops: list[AddOp | EditOp] = []
    reason = f"NLPG iteration {iteration}" if iteration is not None else "NLPG"
    for cand in supported:
        report.kept.append(cand.to_dict())
        why = f"{reason}: support {cand.support}" + (f"; {cand.kind}" if cand.kind else "")
        if cand.replaces:
            ops.append(EditOp(id=cand.replaces, text=cand.text, when=cand.when or "", trace_ids=cand.trace_ids,
                              match=cand.match or None, reason=why))
        else:
            ops.append(AddOp(route=cand.route, text=cand.text, when=cand.when, trace_ids=cand.trace_ids,
                             match=cand.match, reason=why))
    return ops, report
