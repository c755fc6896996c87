"""Diffs between two policy versions: per route, added / removed / edited entries with word-level highlights.

Entries are matched by id within a route. ``edited`` means the same id with a changed text, condition, kind or
status (``text_ops`` / ``when_ops`` give the word-level diff); pure counter changes (helpful, harmful, support)
are listed separately under ``counters``. The terminal rendering marks deleted words ``[-like this-]`` and
inserted words ``{+like this+}`` (as ``git diff --word-diff`` does), coloured when the terminal allows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from rich.markup import escape

from nlgrad.policy.memory import PolicyMemory
from nlgrad.policy.render import render_line
from nlgrad.policy.schema import PolicyEntry, id_sort_key
from nlgrad.policy.tokens import word_ops
from nlgrad.terminal_text import escape_controls


class EntryEdit(BaseModel):
    id: str
    fields: list[str]
    old: PolicyEntry
    new: PolicyEntry
    text_ops: list[dict[str, str]] = Field(default_factory=list)
    when_ops: list[dict[str, str]] = Field(default_factory=list)


class CounterChange(BaseModel):
    id: str
    changes: dict[str, tuple[int, int]]


class RouteDiff(BaseModel):
    route: str
    added: list[PolicyEntry] = Field(default_factory=list)
    removed: list[PolicyEntry] = Field(default_factory=list)
    edited: list[EntryEdit] = Field(default_factory=list)
    counters: list[CounterChange] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.edited or self.counters)


class PolicyDiff(BaseModel):
    old_label: str
    new_label: str
    old_version: int
    new_version: int
    old_program: str | None = None
    new_program: str | None = None
    old_benchmark: str | None = None
    new_benchmark: str | None = None
    mismatch: list[str] = Field(default_factory=list, description="how the two policies' origins differ (program, "
                                "benchmark); empty when both were learned for the same ones")
    routes: list[RouteDiff] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return all(route.empty for route in self.routes)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


_EDIT_FIELDS = ("text", "when", "kind", "status")
_COUNTER_FIELDS = ("helpful", "harmful", "support")


def origin_mismatch(old: PolicyMemory, new: PolicyMemory) -> list[str]:
    """One line per origin field (program, benchmark) recorded in both memories with different values."""
    lines = []
    for field, plural in (("program", "programs"), ("benchmark", "benchmarks")):
        a, b = getattr(old, field), getattr(new, field)
        if a and b and a != b:
            lines.append(f"the two policies are for different {plural}: {a!r} vs {b!r}")
    return lines


def diff_memories(old: PolicyMemory, new: PolicyMemory, *, old_label: str | None = None,
                  new_label: str | None = None) -> PolicyDiff:
    """Compare two memories route by route (and say when they come from different programs or benchmarks)."""
    result = PolicyDiff(old_label=old_label or f"v{old.version}", new_label=new_label or f"v{new.version}",
                        old_version=old.version, new_version=new.version, old_program=old.program,
                        new_program=new.program, old_benchmark=old.benchmark, new_benchmark=new.benchmark,
                        mismatch=origin_mismatch(old, new))
    for route in sorted(set(old.routes()) | set(new.routes())):
        before = {e.id: e for e in old.entries(route)}
        after = {e.id: e for e in new.entries(route)}
        rd = RouteDiff(route=route)
        rd.added = [e for e in new.entries(route) if e.id not in before]
        rd.removed = [e for e in old.entries(route) if e.id not in after]
        for entry_id in sorted(set(before) & set(after), key=id_sort_key):
            a, b = before[entry_id], after[entry_id]
            changed = [f for f in _EDIT_FIELDS if getattr(a, f) != getattr(b, f)]
            if changed:
                rd.edited.append(EntryEdit(
                    id=entry_id or "", fields=changed, old=a, new=b,
                    text_ops=word_ops(a.text, b.text) if "text" in changed else [],
                    when_ops=word_ops(a.when, b.when) if "when" in changed else []))
            counters = {f: (getattr(a, f), getattr(b, f)) for f in _COUNTER_FIELDS if getattr(a, f) != getattr(b, f)}
            if counters:
                rd.counters.append(CounterChange(id=entry_id or "", changes=counters))
        if not rd.empty:
            result.routes.append(rd)
    return result


def diff_files(old_path: str | Path, new_path: str | Path) -> PolicyDiff:
    """Diff two policy files (JSON version files or hand-written YAML), or the latest versions of two dirs."""
    from nlgrad.policy.store import load_policy

    return diff_memories(load_policy(old_path), load_policy(new_path), old_label=str(old_path),
                         new_label=str(new_path))


def diff_versions(directory: str | Path, old_version: int, new_version: int) -> PolicyDiff:
    """Diff two versions of the policy stored in ``directory``."""
    from nlgrad.policy.store import PolicyStore

    store = PolicyStore(directory)
    return diff_memories(store.load(old_version), store.load(new_version))


def _shown(text: str) -> str:
    """``text`` for the markup below: control and bidi characters as escapes, markup brackets escaped."""
    return escape(escape_controls(text))


def markup_word_ops(ops: list[dict[str, Any]]) -> str:
    """Rich markup for word ops: ``[-deleted-]`` in red, ``{+inserted+}`` in green, equal words plain."""
    parts = []
    for op in ops:
        text = _shown(op["text"])
        if op["op"] == "delete":
            parts.append(f"[red strike]\\[-{text}-][/red strike]")
        elif op["op"] == "insert":
            parts.append(f"[green bold]{{+{text}+}}[/green bold]")
        else:
            parts.append(text)
    return " ".join(parts)


def _entry_text(entry: PolicyEntry) -> str:
    """An entry as rendered, without the leading "- "; continuation lines (examples, document sections) are
    indented by four spaces so that they read under the ``+ id`` / ``- id`` line they belong to."""
    return render_line(entry)[2:].replace("\n", "\n  ")


def diff_markup(diff: PolicyDiff) -> str:
    """The whole diff as rich markup (coloured on a terminal; markers keep it readable without colour)."""
    lines = [f"[bold]--- {_shown(diff.old_label)}[/bold]", f"[bold]+++ {_shown(diff.new_label)}[/bold]"]
    lines += [f"[bold yellow]note:[/bold yellow] {_shown(line)}" for line in diff.mismatch]
    if diff.empty:
        lines.append("no changes")
        return "\n".join(lines)
    for rd in diff.routes:
        lines.append("")
        lines.append(f"[bold cyan]route {_shown(rd.route)}[/bold cyan]")
        for e in rd.added:
            lines.append(f"[green]+ {_shown(e.id or '')}  {_shown(_entry_text(e))}[/green]"
                         + (f" [dim]({e.status.value})[/dim]" if not e.active else ""))
        for e in rd.removed:
            lines.append(f"[red]- {_shown(e.id or '')}  {_shown(_entry_text(e))}[/red]")
        for ed in rd.edited:
            lines.append(f"[yellow]~ {_shown(ed.id)}[/yellow]  [dim]({', '.join(ed.fields)})[/dim]")
            if ed.when_ops:
                lines.append(f"    when: {markup_word_ops(ed.when_ops)}")
            if ed.text_ops:
                lines.append(f"    text: {markup_word_ops(ed.text_ops)}")
            for field in ("kind", "status"):
                if field in ed.fields:
                    lines.append(f"    {field}: {getattr(ed.old, field).value} -> {getattr(ed.new, field).value}")
        for cc in rd.counters:
            changes = ", ".join(f"{k} {a}->{b}" for k, (a, b) in cc.changes.items())
            lines.append(f"[dim]= {_shown(cc.id)}  {changes}[/dim]")
    return "\n".join(lines)
