"""Bounded policy updates: deterministic application of LM-proposed operations under :class:`PolicyBounds`.

LMs propose; this module disposes. The same memory, operations, bounds and provenance always give the same new
memory and the same :class:`UpdateReport`. Nothing is silently dropped: every operation ends up in exactly one of
``report.applied``, ``report.merged_duplicates`` or ``report.trimmed`` (with the rule and a reason).
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from pydantic import BaseModel, ValidationError

from nlgrad.policy.bounds import DEFAULT_BOUNDS, PolicyBounds
from nlgrad.policy.condition_split import separate_condition
from nlgrad.policy.errors import PolicyUpdateError
from nlgrad.policy.memory import PolicyMemory
from nlgrad.policy.ops import AddOp, DeleteOp, DownvoteOp, EditOp, MergeOp, UpvoteOp, parse_operation
from nlgrad.policy.render import render_line
from nlgrad.policy.schema import (MAX_EXAMPLE_CHARS, EntryKind, EntryStatus, PolicyEntry,
                                  Provenance, clean_when, id_sort_key)
from nlgrad.policy.similarity import DEFAULT_SIMILARITY, Similarity
from nlgrad.policy.tokens import count_tokens, edit_distance, policy_tokens
from nlgrad.policy.update_report import (AppliedOp, MergedDuplicate, TrimmedOp, TrimRule, UpdateProvenance,
                                         UpdateReport)

MAX_TRACE_IDS = 50
"""Provenance keeps at most this many trace ids per entry (the earliest ones)."""


def _dump(op: Any) -> dict[str, Any]:
    if isinstance(op, BaseModel):
        return op.model_dump(mode="json")
    if isinstance(op, dict):
        return {str(k): v for k, v in op.items()}
    return {"value": repr(op)}


def _union(first: list[str], *more: Iterable[str]) -> list[str]:
    out = list(dict.fromkeys(first))
    for items in more:
        for item in items:
            if item not in out:
                out.append(item)
    return out[:MAX_TRACE_IDS]


def _line_tokens(entry: PolicyEntry) -> int:
    return count_tokens(render_line(entry)) if entry.active else 0


class _Updater:
    def __init__(self, memory: PolicyMemory, bounds: PolicyBounds, provenance: UpdateProvenance,
                 similarity: Similarity):
        self.memory = memory
        self.bounds = bounds
        self.prov = provenance
        self.similarity = similarity
        self.report = UpdateReport()

    # ------------------------------------------------------------------------------------------------ helpers
    def trim(self, index: int, op: Any, rule: TrimRule, reason: str) -> None:
        self.report.trimmed.append(TrimmedOp(index=index, op=_dump(op), rule=rule, reason=reason))

    def applied(self, index: int, op: Any, entry_id: str | None, cost: int, evicted: list[str] | None = None) -> None:
        self.report.applied.append(AppliedOp(index=index, op=_dump(op), entry_id=entry_id, cost=cost,
                                             evicted=evicted or []))
        if op.changes_text:
            self.report.text_ops += 1
            self.report.total_cost += cost

    def over_ops(self, index: int, op: Any) -> bool:
        if self.report.text_ops >= self.bounds.max_ops_per_update:
            self.trim(index, op, "max_ops_per_update",
                      f"{self.bounds.max_ops_per_update} text-changing op(s) already applied in this update")
            return True
        return False

    def over_cost(self, index: int, op: Any, cost: int) -> bool:
        if self.report.total_cost + cost > self.bounds.max_edit_cost:
            self.trim(index, op, "max_edit_cost",
                      f"edit cost {cost} would bring the update to {self.report.total_cost + cost} tokens "
                      f"(max_edit_cost={self.bounds.max_edit_cost})")
            return True
        return False

    def over_tokens(self, index: int, op: Any, route: str, before: int, after: int) -> bool:
        if after > self.bounds.max_tokens_per_route and after > before:
            self.trim(index, op, "max_tokens_per_route",
                      f"route {route} would render {after} tokens (max_tokens_per_route="
                      f"{self.bounds.max_tokens_per_route})")
            return True
        return False

    def long_example(self, index: int, op: Any, entry: PolicyEntry, text: str | None) -> bool:
        if entry.kind == EntryKind.example and text is not None and len(text) > MAX_EXAMPLE_CHARS:
            self.trim(index, op, "invalid", f"an example's text is limited to {MAX_EXAMPLE_CHARS} characters")
            return True
        return False

    def entry(self, index: int, op: Any, entry_id: str) -> tuple[str, PolicyEntry] | None:
        found = self.memory.find(entry_id)
        if found is None:
            self.trim(index, op, "invalid", f"unknown entry id {entry_id!r}")
            return None
        return found[0], found[2]

    def remove(self, route: str, entry_ids: set[str]) -> None:
        kept = [e for e in self.memory.by_route.get(route, []) if e.id not in entry_ids]
        if kept:
            self.memory.by_route[route] = kept
        else:
            self.memory.by_route.pop(route, None)

    # ------------------------------------------------------------------------------------------------ ops
    def vote(self, index: int, op: UpvoteOp | DownvoteOp) -> None:
        found = self.entry(index, op, op.id)
        if found is None:
            return
        _, entry = found
        if isinstance(op, UpvoteOp):
            entry.helpful += op.amount
        else:
            entry.harmful += op.amount
        self.applied(index, op, entry.id, 0)

    def add(self, index: int, op: AddOp) -> None:
        route = op.route
        candidate = PolicyEntry(id=None, text=op.text, when=op.when, match=op.match, kind=op.kind,
                                provenance=Provenance(source=self.prov.source, iteration=self.prov.iteration,
                                                      trace_ids=_union(self.prov.trace_ids, op.trace_ids),
                                                      reason=op.reason or None))
        active = self.memory.active_entries(route)
        line = render_line(candidate)
        is_example = candidate.kind == EntryKind.example
        best: tuple[float, PolicyEntry] | None = None
        for existing in active:
            if (existing.kind == EntryKind.example) != is_example:
                continue  # an example is never merged into an instruction, nor an instruction into an example
            score = self.similarity.similarity(line, render_line(existing))
            if best is None or score > best[0]:
                best = (score, existing)
        # examples of one route look alike by form; only an identical one is a duplicate
        threshold = 1.0 if is_example else self.bounds.dedupe_threshold
        if best is not None and best[0] >= threshold:
            target = best[1]
            target.support += 1
            target.provenance.trace_ids = _union(target.provenance.trace_ids, candidate.provenance.trace_ids)
            self.report.merged_duplicates.append(MergedDuplicate(index=index, op=_dump(op), into=target.id or "",
                                                                 similarity=round(best[0], 4)))
            return
        if self.over_ops(index, op):
            return
        if is_example:
            examples = sum(1 for e in active if e.kind == EntryKind.example)
            if examples >= self.bounds.max_examples_per_route:
                self.trim(index, op, "max_examples_per_route",
                          f"route {route} already holds {examples} active examples (max_examples_per_route="
                          f"{self.bounds.max_examples_per_route})")
                return
        new_tokens = count_tokens(line)
        count, tokens = len(active), self.memory.tokens(route)
        evict: list[PolicyEntry] = []
        victims = sorted(active, key=lambda e: (e.utility, e.support, id_sort_key(e.id)))
        while count + 1 > self.bounds.max_entries_per_route or tokens + new_tokens > self.bounds.max_tokens_per_route:
            if len(evict) == len(victims) or victims[len(evict)].utility >= 0:
                if count + 1 > self.bounds.max_entries_per_route:
                    self.trim(index, op, "max_entries_per_route",
                              f"route {route} has {len(active)} active entries (max_entries_per_route="
                              f"{self.bounds.max_entries_per_route}) and none has negative utility to evict")
                else:
                    self.trim(index, op, "max_tokens_per_route",
                              f"route {route} would render {tokens + new_tokens} tokens (max_tokens_per_route="
                              f"{self.bounds.max_tokens_per_route}) and no entry with negative utility is left "
                              "to evict")
                return
            victim = victims[len(evict)]
            evict.append(victim)
            count -= 1
            tokens -= _line_tokens(victim)
        cost = new_tokens + sum(_line_tokens(v) for v in evict)
        if self.over_cost(index, op, cost):
            return
        evicted_ids = [v.id or "" for v in evict]
        self.remove(route, set(evicted_ids))
        candidate.id = self.memory.next_id(route)
        self.memory.by_route.setdefault(route, []).append(candidate)
        self.applied(index, op, candidate.id, cost, evicted_ids)

    def edit(self, index: int, op: EditOp) -> None:
        found = self.entry(index, op, op.id)
        if found is None:
            return
        route, entry = found
        new_text = op.text if op.text is not None else entry.text
        new_when = op.new_when(entry.when)
        new_match = entry.match if op.match is None else op.match
        new_text, new_when = separate_condition(new_text, new_when, entry.kind)
        if new_text == entry.text and new_when == entry.when and new_match == entry.match:
            self.trim(index, op, "invalid", f"the edit leaves {entry.id} unchanged")
            return
        if self.long_example(index, op, entry, new_text):
            return
        if self.over_ops(index, op):
            return
        after = entry.model_copy(update={"text": new_text, "when": new_when, "match": new_match})
        before_route = self.memory.tokens(route)
        after_route = before_route - _line_tokens(entry) + _line_tokens(after)
        if self.over_tokens(index, op, route, before_route, after_route):
            return
        cost = (edit_distance(policy_tokens(render_line(entry)), policy_tokens(render_line(after)))
                if entry.active else 0)
        if self.over_cost(index, op, cost):
            return
        entry.text, entry.when, entry.match = new_text, new_when, list(new_match)
        entry.provenance.revised_iteration = self.prov.iteration
        entry.provenance.trace_ids = _union(entry.provenance.trace_ids, self.prov.trace_ids, op.trace_ids)
        self.applied(index, op, entry.id, cost)

    def delete(self, index: int, op: DeleteOp) -> None:
        found = self.entry(index, op, op.id)
        if found is None:
            return
        route, entry = found
        if self.over_ops(index, op):
            return
        cost = _line_tokens(entry)
        if self.over_cost(index, op, cost):
            return
        self.remove(route, {entry.id or ""})
        self.applied(index, op, entry.id, cost)

    def merge(self, index: int, op: MergeOp) -> None:
        sources: list[PolicyEntry] = []
        route: str | None = None
        for entry_id in op.ids:
            found = self.entry(index, op, entry_id)
            if found is None:
                return
            if route is not None and found[0] != route:
                self.trim(index, op, "invalid", f"merge ids span routes {route!r} and {found[0]!r}")
                return
            route = found[0]
            sources.append(found[1])
        assert route is not None
        if self.over_ops(index, op):
            return
        first = sources[0]
        if self.long_example(index, op, first, op.text):
            return
        any_active = any(s.active for s in sources)
        merged_text, merged_when = separate_condition(op.text if op.text is not None else first.text,
                                                      first.when if op.when is None else clean_when(op.when),
                                                      first.kind)
        merged = first.model_copy(deep=True, update={
            "text": merged_text,
            "when": merged_when,
            "status": EntryStatus.active if any_active else first.status,
        })
        before_tokens = [tok for s in sources if s.active for tok in policy_tokens(render_line(s))]
        after_tokens = policy_tokens(render_line(merged)) if merged.active else []
        before_route = self.memory.tokens(route)
        after_route = before_route - sum(_line_tokens(s) for s in sources) + _line_tokens(merged)
        if self.over_tokens(index, op, route, before_route, after_route):
            return
        cost = edit_distance(before_tokens, after_tokens)
        if self.over_cost(index, op, cost):
            return
        first.text, first.when, first.status = merged.text, merged.when, merged.status
        first.helpful = sum(s.helpful for s in sources)
        first.harmful = sum(s.harmful for s in sources)
        first.support = sum(s.support for s in sources)
        first.provenance.revised_iteration = self.prov.iteration
        first.provenance.trace_ids = _union(first.provenance.trace_ids,
                                            *(s.provenance.trace_ids for s in sources[1:]),
                                            self.prov.trace_ids, op.trace_ids)
        self.remove(route, {s.id or "" for s in sources[1:]})
        self.applied(index, op, first.id, cost)


def apply_update(memory: PolicyMemory, ops: Iterable[Any] | str, bounds: PolicyBounds | None = None,
                 provenance: UpdateProvenance | dict[str, Any] | None = None, *,
                 similarity: Similarity | None = None) -> tuple[PolicyMemory, UpdateReport]:
    """Apply proposed operations to a copy of ``memory`` under ``bounds``; return ``(new_memory, report)``.

    ``ops`` are operation models, dicts, or a JSON list (an LM's raw proposal). Deterministic: no clock, no
    randomness; equal inputs give equal outputs. ``memory`` is not modified.

    **Trim rule.** Operations are considered one at a time, in the order given (the proposer's priority order):

    1. An op that does not validate, names an unknown entry id, merges entries of different routes, or edits an
       entry without changing it is trimmed with rule ``invalid``.
    2. ``upvote`` / ``downvote`` always apply (they change counters, not text, and cost nothing).
    3. An ``add`` whose rendered line is a near-duplicate of an active entry of its route (similarity >=
       ``dedupe_threshold``, most similar first) is merged into that entry instead: its ``support`` grows by one
       and the trace ids are joined. This costs nothing and is listed in ``report.merged_duplicates``.
    4. Text-changing ops (``add``, ``edit``, ``delete``, ``merge``) apply while fewer than ``max_ops_per_update``
       have been applied; later ones are trimmed (``max_ops_per_update``). Trimmed ops do not use up the budget.
    5. An ``add`` to a route that is full (``max_entries_per_route`` active entries, or its rendered text would
       exceed ``max_tokens_per_route``) evicts the lowest-utility active entries (utility = helpful - harmful;
       ties: lower support, then older id) as long as they have *lower* utility than a new entry (i.e. < 0),
       until the add fits. If it cannot fit, it is trimmed (``max_entries_per_route`` / ``max_tokens_per_route``)
       and nothing is evicted.
       An ``add`` of kind ``example`` is compared only with the route's other examples, and merged only into
       an identical one (examples of a route look alike by form); other entries are never merged into an example.
       A route holds at most ``max_examples_per_route`` active examples; a further one is trimmed
       (``max_examples_per_route``), and an example's text is limited to ``MAX_EXAMPLE_CHARS`` (``invalid``).
    6. An ``edit`` or ``merge`` that would make its route's text longer than ``max_tokens_per_route`` (and longer
       than it was) is trimmed (``max_tokens_per_route``).
    7. Each text-changing op has an edit cost: the token edit distance between the rendered lines it removes
       and those it adds (an add costs its tokens plus those of evicted entries, a delete the deleted tokens, an
       edit the distance between old and new line, a merge the distance between the concatenated sources and the
       merged line). An op that would bring the update's total above ``max_edit_cost`` is trimmed
       (``max_edit_cost``); later, cheaper ops may still apply.

    The new memory is uncommitted (``version=0``) with ``parent`` = the input's version, ``method`` = the
    provenance source and ``n_ops`` = the number of applied ops; :meth:`PolicyStore.commit` numbers it.
    """
    bounds = bounds or DEFAULT_BOUNDS
    if isinstance(ops, (str, bytes)):
        try:
            ops = json.loads(ops)
        except json.JSONDecodeError as exc:
            raise PolicyUpdateError(f"a proposal is a JSON list of operations: {exc}") from None
        if not isinstance(ops, list):
            raise PolicyUpdateError("a proposal is a JSON list of operations")
    if provenance is None:
        prov = UpdateProvenance()
    elif isinstance(provenance, UpdateProvenance):
        prov = provenance
    else:
        prov = UpdateProvenance.model_validate(provenance)
    new = memory.model_copy(deep=True)
    updater = _Updater(new, bounds, prov, similarity or DEFAULT_SIMILARITY)
    for index, raw in enumerate(ops):
        try:
            op = parse_operation(raw)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            field = ".".join(str(p) for p in first["loc"]) or "<op>"
            updater.trim(index, raw, "invalid", f"{field}: {first['msg']}")
            continue
        if isinstance(op, (UpvoteOp, DownvoteOp)):
            updater.vote(index, op)
        elif isinstance(op, AddOp):
            updater.add(index, op)
        elif isinstance(op, EditOp):
            updater.edit(index, op)
        elif isinstance(op, DeleteOp):
            updater.delete(index, op)
        elif isinstance(op, MergeOp):
            updater.merge(index, op)
    new.parent = memory.version if memory.version else memory.parent
    new.version = 0
    new.created = None
    new.method = prov.source
    new.scores = {}
    new.note = ""
    new.n_ops = len(updater.report.applied)
    return new, updater.report
