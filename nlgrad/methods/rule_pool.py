"""JERP's experiential rule pool: rules with utility scores kept in policy memory, their operations, and pruning.

The pool *is* the policy memory: each rule is an entry of kind ``rule`` on a route, its utility is the entry's
``helpful - harmful`` counters. A policy store holds one program on one benchmark, so each task family
(``twx/cooking``, ``hotpotqa``, ...) has its own pool and its own successful reference trajectories.

* The reflector speaks the pool's vocabulary (:class:`ReflectorOp`: ADD / EDIT / UPVOTE / DOWNVOTE / MERGE);
  :func:`to_policy_ops` validates each against the pool (unknown ids, cross-route merges, empty or placeholder
  texts are dropped with a reason; an EDIT of an unknown id that carries a usable rule is kept as an ADD) and turns
  it into a policy operation, applied by :func:`nlgrad.policy.apply_update`.
* :func:`presence_votes` keeps the rules aligned with the agent's current behaviour: a rule that was retrieved in
  at least ``min_failures`` failed rollouts of the batch and in fewer successes loses utility (downvote by the
  difference); a rule retrieved in more successes than failures gains it.
* :func:`prune_ops` cuts each route back to ``capacity`` rules, lowest utility first (ties: lower support, then the
  older id, the same order the policy bounds evict in), and removes rules whose utility fell to ``min_utility``.
* :class:`ReferenceStore` keeps successful trajectories per task family (JSON, newest ``max_per_family``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

from pydantic import BaseModel, Field, create_model, field_validator, model_validator

from nlgrad.files import write_json_atomic
from nlgrad.methods.lesson_checks import condition_problem
from nlgrad.methods.reply_fields import OptionalText, squash_or_none
from nlgrad.policy import (AddOp, DeleteOp, DownvoteOp, EditOp, EntryKind, MergeOp, PolicyBounds, PolicyMemory,
                           UpdateProvenance, UpdateReport, UpvoteOp, apply_update)
from nlgrad.policy.schema import PolicyEntry, id_sort_key

OpName = Literal["ADD", "EDIT", "UPVOTE", "DOWNVOTE", "MERGE"]


# ------------------------------------------------------------------------------------------------ reflector reply
class ReflectorOp(BaseModel):
    """One pool operation proposed by the reflector (names and fields as the reflector prompt asks for them)."""

    op: OpName
    id: OptionalText = None
    ids: list[str] = Field(default_factory=list)
    route: OptionalText = None
    text: OptionalText = None
    when: OptionalText = None
    reason: str = ""

    @field_validator("op", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return str(value).strip().upper() if value is not None else value

    @field_validator("ids", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return [str(v).strip() for v in value if str(v).strip()]

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> Any:
        return " ".join(str(value or "").split())[:300]


class Reflection(BaseModel):
    ops: list[ReflectorOp] = Field(default_factory=list)


@lru_cache(maxsize=32)
def reflection_schema(routes: tuple[str, ...]) -> type[Reflection]:
    """:class:`Reflection` whose ops must name one of ``routes``: the JSON grammar of a local model then offers
    exactly these route names and no null (given an optional route, a small reflector tends to choose null, and an
    ADD without a route is dropped). A short name ("answer") is mapped as :func:`match_route` does;
    an unknown name fails validation and is re-asked. Votes and merges address rules by id, so a reply that omits
    their route is accepted (the route is filled in and never used); so is any op of a one-route program."""
    if not routes:
        return Reflection

    def known_route(cls, value: Any) -> Any:
        name = squash_or_none(value)
        return match_route(name, list(routes), None) or name

    def route_optional_for_votes(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("route") and (
                len(routes) == 1 or str(data.get("op", "")).strip().upper() not in ("ADD", "EDIT")):
            return {**data, "route": routes[0]}
        return data

    op_model = create_model("ReflectorOpOnRoutes", __base__=ReflectorOp,
                            __validators__={"_known_route": field_validator("route", mode="before")(known_route),
                                            "_votes": model_validator(mode="before")(route_optional_for_votes)},
                            route=(Literal[routes], ...))
    return create_model("ReflectionOnRoutes", __base__=Reflection,
                        ops=(list[op_model], Field(default_factory=list)))


def is_placeholder(text: str | None) -> bool:
    """True for an empty text or a prompt placeholder copied back by a small model ("<rule>", "...")."""
    stripped = (text or "").strip().strip('"').strip()
    return not stripped or bool(re.fullmatch(r"<[^<>]*>|\.{3}|…", stripped))


def match_route(name: str | None, routes: list[str], default: str | None) -> str | None:
    """A route an LM named: exact, else the only route containing the name (or contained in it), else ``default``
    ("answer" -> "hotpot.answer"; "hotpot.hop1_query or hotpot.answer" stays ambiguous -> ``default``)."""
    if not name:
        return default
    if name in routes:
        return name
    low = name.strip().lower()
    hits = [r for r in routes if low and (low in r.lower() or r.lower() in low)]
    return hits[0] if len(hits) == 1 else default


# ------------------------------------------------------------------------------------------------ the pool
class RulePool:
    """Read-only view of the rules of a policy memory, per route, with their utilities."""

    def __init__(self, memory: PolicyMemory):
        self.memory = memory

    def rules(self, route: str) -> list[PolicyEntry]:
        return self.memory.active_entries(route)

    def get(self, rule_id: str) -> tuple[str, PolicyEntry] | None:
        found = self.memory.find(rule_id)
        if found is None or not found[2].active:
            return None
        return found[0], found[2]

    def size(self, route: str) -> int:
        return len(self.rules(route))

    def describe(self, route: str) -> list[dict[str, Any]]:
        return [{"id": e.id, "text": e.text, "when": e.when, "utility": e.utility, "support": e.support}
                for e in sorted(self.rules(route), key=lambda e: (-e.utility, id_sort_key(e.id)))]


def to_policy_ops(proposed: Iterable[ReflectorOp], pool: RulePool, *, routes: list[str], trace_ids: list[str],
                  default_route: str | None = None, text_problem: Callable[[str], str | None] | None = None
                  ) -> tuple[list[Any], list[dict[str, Any]]]:
    """Validate reflector ops against the pool; returns ``(policy_ops, dropped)`` (each dropped op with a reason).
    ``text_problem`` (e.g. :func:`nlgrad.methods.lesson_checks.lesson_problem`) says why a new rule text is no
    reusable lesson; ADD, EDIT and MERGE ops whose text it objects to are dropped with that reason."""
    ops: list[Any] = []
    dropped: list[dict[str, Any]] = []

    def drop(op: ReflectorOp, reason: str) -> None:
        dropped.append({**op.model_dump(), "trace_ids": trace_ids, "dropped": reason})

    for op in proposed:
        reason = f"JERP reflector: {op.reason}".strip(": ")
        problem = text_problem(op.text) if text_problem and op.op in ("ADD", "EDIT", "MERGE") \
            and not is_placeholder(op.text) else None
        if not problem and op.op in ("ADD", "EDIT", "MERGE"):
            problem = condition_problem(op.when, routes)
        if problem:
            drop(op, problem)
            continue
        if op.op == "ADD":
            route = match_route(op.route, routes, default_route)
            if is_placeholder(op.text) or len(op.text or "") < 8:
                drop(op, "ADD without a usable rule text")
            elif route is None:
                drop(op, f"ADD names no known route (known: {', '.join(routes)})")
            else:
                ops.append(AddOp(route=route, text=op.text, when=op.when, kind=EntryKind.rule, trace_ids=trace_ids,
                                 reason=reason))
        elif op.op == "EDIT":
            route = match_route(op.route, routes, default_route)
            if (not op.id or pool.get(op.id) is None) and not is_placeholder(op.text) and len(op.text or "") >= 8 \
                    and route is not None:  # small models "edit" rules that do not exist: keep the text as an ADD
                ops.append(AddOp(route=route, text=op.text, when=op.when, kind=EntryKind.rule, trace_ids=trace_ids,
                                 reason=f"{reason} (EDIT of unknown rule {op.id!r} kept as ADD)"))
            elif not op.id or pool.get(op.id) is None:
                drop(op, f"EDIT of unknown rule {op.id!r}")
            elif is_placeholder(op.text) and op.when is None:
                drop(op, "EDIT without a new text")
            else:
                text = None if is_placeholder(op.text) else op.text
                ops.append(EditOp(id=op.id, text=text, when=op.when, trace_ids=trace_ids, reason=reason))
        elif op.op in ("UPVOTE", "DOWNVOTE"):
            if not op.id or pool.get(op.id) is None:
                drop(op, f"{op.op} of unknown rule {op.id!r}")
            else:
                cls = UpvoteOp if op.op == "UPVOTE" else DownvoteOp
                ops.append(cls(id=op.id, trace_ids=trace_ids, reason=reason))
        elif op.op == "MERGE":
            ids = list(dict.fromkeys(op.ids or ([op.id] if op.id else [])))
            found = [pool.get(i) for i in ids]
            if len(ids) < 2 or any(f is None for f in found):
                drop(op, "MERGE needs at least two known rule ids")
            elif len({f[0] for f in found if f}) != 1:
                drop(op, "MERGE of rules on different routes")
            else:
                text = None if is_placeholder(op.text) else op.text
                ops.append(MergeOp(ids=ids, text=text, trace_ids=trace_ids, reason=reason))
    return ops, dropped


def combine_votes(ops: list[Any]) -> list[Any]:
    """Text ops keep their order; votes on the same rule are netted into one up- or downvote (placed first)."""
    net: dict[str, int] = defaultdict(int)
    traces: dict[str, list[str]] = defaultdict(list)
    reasons: dict[str, list[str]] = defaultdict(list)
    text_ops = []
    for op in ops:
        if isinstance(op, (UpvoteOp, DownvoteOp)):
            net[op.id] += op.amount if isinstance(op, UpvoteOp) else -op.amount
            traces[op.id] += [t for t in op.trace_ids if t not in traces[op.id]]
            if op.reason and op.reason not in reasons[op.id]:
                reasons[op.id].append(op.reason)
        else:
            text_ops.append(op)
    votes: list[Any] = []
    for rule_id in sorted(net, key=id_sort_key):
        amount = net[rule_id]
        if amount == 0:
            continue
        cls = UpvoteOp if amount > 0 else DownvoteOp
        votes.append(cls(id=rule_id, amount=abs(amount), trace_ids=traces[rule_id][:20],
                         reason="; ".join(reasons[rule_id])[:400]))
    return votes + text_ops


@dataclass
class Presence:
    """Which rules one rollout saw (retrieved for its task) and how it ended."""

    trace_id: str
    success: bool
    rule_ids: list[str]


def presence_votes(records: list[Presence], *, min_failures: int = 2) -> list[Any]:
    """Votes from co-occurrence of rules with outcomes in one batch (see the module docstring)."""
    fails: dict[str, list[str]] = defaultdict(list)
    wins: dict[str, list[str]] = defaultdict(list)
    for rec in records:
        for rule_id in dict.fromkeys(rec.rule_ids):
            (wins if rec.success else fails)[rule_id].append(rec.trace_id)
    votes: list[Any] = []
    for rule_id in sorted(set(fails) | set(wins), key=id_sort_key):
        f, w = len(fails[rule_id]), len(wins[rule_id])
        if f >= min_failures and f > w:
            votes.append(DownvoteOp(id=rule_id, amount=f - w, trace_ids=fails[rule_id],
                                    reason=f"present in {f} failed and {w} successful rollouts of the batch"))
        elif w > f:
            votes.append(UpvoteOp(id=rule_id, amount=w - f, trace_ids=wins[rule_id],
                                  reason=f"present in {w} successful and {f} failed rollouts of the batch"))
    return votes


def prune_ops(memory: PolicyMemory, *, capacity: int, min_utility: int | None = None) -> list[DeleteOp]:
    """Deletes that bring every route to at most ``capacity`` active rules, lowest utility first."""
    ops: list[DeleteOp] = []
    for route in memory.routes():
        active = sorted(memory.active_entries(route), key=lambda e: (e.utility, e.support, id_sort_key(e.id)))
        doomed = [e for e in active if min_utility is not None and e.utility <= min_utility]
        keep = [e for e in active if e not in doomed]
        doomed += keep[: max(0, len(keep) - capacity)]
        for entry in doomed:
            low = min_utility is not None and entry.utility <= min_utility
            why = (f"utility {entry.utility} <= {min_utility}" if low
                   else f"pool over capacity {capacity}: lowest utility ({entry.utility})")
            ops.append(DeleteOp(id=entry.id or "", reason=f"JERP prune: {why}"))
    return ops


def pool_bounds(bounds: PolicyBounds, capacity: int) -> PolicyBounds:
    """Bounds for one pool update: the route may overflow capacity by the update's adds (pruning follows), and the
    token bound covers the whole pool (only the top-k retrieved rules ever reach a prompt)."""
    return bounds.model_copy(update={
        "max_entries_per_route": capacity + bounds.max_ops_per_update,
        "max_tokens_per_route": max(bounds.max_tokens_per_route, 60 * (capacity + bounds.max_ops_per_update)),
    })


def apply_pool_update(memory: PolicyMemory, ops: list[Any], *, bounds: PolicyBounds, capacity: int,
                      provenance: UpdateProvenance, min_utility: int | None = None
                      ) -> tuple[PolicyMemory, UpdateReport, UpdateReport]:
    """Apply the batch's ops under the pool bounds, then prune to capacity. Returns (memory, update, prune)."""
    updated, report = apply_update(memory, combine_votes(ops), pool_bounds(bounds, capacity), provenance)
    deletes = prune_ops(updated, capacity=capacity, min_utility=min_utility)
    unbounded = PolicyBounds(max_entries_per_route=10_000, max_tokens_per_route=10**7, max_ops_per_update=10_000,
                             max_edit_cost=10**9, dedupe_threshold=bounds.dedupe_threshold)
    pruned, prune_report = apply_update(updated, deletes, unbounded, provenance)
    pruned.n_ops = updated.n_ops + pruned.n_ops
    return pruned, report, prune_report


# ------------------------------------------------------------------------------------------------ references
class ReferenceStore:
    """Successful trajectories per task family, in one JSON file. Entries remember the iteration that added them,
    so a resumed iteration sees exactly the references an uninterrupted run would have seen."""

    def __init__(self, path: Path, *, max_per_family: int = 8):
        self.path, self.max_per_family = Path(path), max_per_family
        self.data: dict[str, list[dict[str, Any]]] = {}
        if self.path.exists():
            self.data = json.loads(self.path.read_text(encoding="utf-8"))

    def add(self, family: str, record: dict[str, Any], iteration: int) -> None:
        items = [r for r in self.data.get(family, []) if r["task_id"] != record["task_id"]]
        items.append({**record, "iteration": iteration})
        items.sort(key=lambda r: (r["iteration"], r["task_id"]))
        self.data[family] = items[-self.max_per_family:]

    def before(self, family: str, iteration: int) -> list[dict[str, Any]]:
        return [r for r in self.data.get(family, []) if r["iteration"] < iteration]

    def save(self) -> None:
        write_json_atomic(self.path, self.data)
