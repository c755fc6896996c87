"""DB-state comparison for the tau2 benchmarks (see :mod:`nlgrad.benchmarks.tau2`): how tau2 scores the ``DB``
part of its reward.

Replay the task's gold actions on a fresh copy of
the DB (a failing gold action is skipped, as upstream does) and compare with the agent's final DB. Both start from
the same DB, so we compare *changes*: ``{table: {key: record or None}}`` for every record that differs from the
initial DB. Equal changes <=> equal DBs. Records are compared with Python ``==`` (upstream hashes the pydantic
dump, where ``500`` and ``500.0`` are equal too after coercion).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from nlgrad.benchmarks.tau2_tools import DomainData, compact

_MISSING = object()
_lock = threading.Lock()


def db_changes(base: dict[str, Any], db: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{table: {key: record}}`` for every record that differs from ``base`` (``None``: the record was removed)."""
    out: dict[str, dict[str, Any]] = {}
    for table in sorted(set(base) | set(db)):
        before, after = base.get(table), db.get(table)
        if not isinstance(before, dict) or not isinstance(after, dict):
            if before != after:
                out[table] = {"": after}
            continue
        changed = {k: v for k, v in after.items() if k not in before or before[k] != v}
        changed.update({k: None for k in before if k not in after})
        if changed:
            out[table] = changed
    return out


_replays: dict[tuple[str, str], tuple[dict[str, Any], list[bool]]] = {}


def expected_changes(data: DomainData, task_id: str) -> tuple[dict[str, Any], list[bool]]:
    """Changes left by replaying the task's gold actions on a fresh DB, and which gold actions succeeded
    (memoized per process)."""
    key = (data.name, task_id)
    with _lock:
        if key in _replays:
            return _replays[key]
    db = data.fresh_db()
    oks = []
    for action in (data.by_id[task_id].get("evaluation_criteria") or {}).get("actions") or []:
        try:
            data.execute(db, action["name"], dict(action.get("arguments") or {}))
            oks.append(True)
        except Exception:  # noqa: BLE001 - upstream skips a failing gold action too
            oks.append(False)
    result = (db_changes(data.base_db, db), oks)
    with _lock:
        _replays[key] = result
    return result


_NOTE = object()  # in field_diffs' third place: the second is a note, not a (got, expected) pair


def _show(value: Any, limit: int = 90) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def field_diffs(got: Any, want: Any, path: str = "", out: list[tuple[str, Any, Any]] | None = None,
                limit: int = 6) -> list[tuple[str, Any, Any]]:
    """(path, got, expected) for the leaves where two records differ, at most ``limit``."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(got, dict) and isinstance(want, dict):
        for k in sorted(set(got) | set(want), key=str):
            a, b = got.get(k, _MISSING), want.get(k, _MISSING)
            if a != b:
                field_diffs(a, b, f"{path}.{k}" if path else str(k), out, limit)
    elif isinstance(got, list) and isinstance(want, list) and len(got) == len(want) and got:
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                field_diffs(a, b, f"{path}[{i}]", out, limit)
    elif isinstance(got, list) and isinstance(want, list) and got[:len(want)] == want[:len(got)]:
        longer, what = (got, "extra") if len(got) > len(want) else (want, "missing")
        out.append((f"{path} has {len(got)} items, expected {len(want)}; {what}", longer[min(len(got), len(want)):],
                    _NOTE))
    elif got != want:
        out.append((path or "(record)", got, want))
    return out[:limit]


def _state(record: Any) -> str:
    return "removed" if record is None else "absent" if record is _MISSING else "present"


def compare_db(base: dict[str, Any], got: dict[str, Any], want: dict[str, Any], *, max_records: int = 6
               ) -> list[str]:
    """One line per record whose final state differs from the expected one, naming the fields (empty: match)."""
    keys = sorted({(t, k) for side in (got, want) for t, recs in side.items() for k in recs})
    differing = [(t, k) for t, k in keys if got.get(t, {}).get(k, _MISSING) != want.get(t, {}).get(k, _MISSING)]
    lines = []
    for table, key in differing[:max_records]:
        table_base = base.get(table)
        original = table_base.get(key, _MISSING) if isinstance(table_base, dict) else _MISSING
        a = got.get(table, {}).get(key, original)
        b = want.get(table, {}).get(key, original)
        label = f"{table}[{key}]"
        if a is None or b is None or a is _MISSING or b is _MISSING:
            lines.append(f"{label}: is {_state(a)}, expected {_state(b)}")
            continue
        who = ("expected change not made" if key not in got.get(table, {}) else
               "changed, but should have stayed as it was" if key not in want.get(table, {}) else
               "changed differently than expected")
        diffs = "; ".join(f"{p}: {_show(x, 160)}" if y is _NOTE else f"{p} is {_show(x)}, expected {_show(y)}"
                          for p, x, y in field_diffs(a, b))
        lines.append(f"{label} {who}: {diffs}")
    if len(differing) > max_records:
        lines.append(f"... and {len(differing) - max_records} more records differ")
    return lines


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [_norm(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return value


def same_call(name: str, args: dict[str, Any], other_name: str, other_args: Any) -> bool:
    return name == other_name and isinstance(other_args, dict) and _norm(args) == _norm(other_args)


def show_call(name: str, args: Any, limit: int = 220) -> str:
    text = f"{name}({compact(args) if isinstance(args, dict) else _show(args)})"
    return text if len(text) <= limit else text[: limit - 3] + "..."
