"""Rendering: the exact, deterministic text that a module's prompt receives for a route.

One line per active entry, ordered by utility (helpful - harmful) descending, then by id in natural order::

    - When the room has no coin, move through an unexplored exit.
    - Read the task before acting.

Multi-line entries (document sections) continue on lines indented by two spaces. A route without active entries
renders as the empty string.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Iterable

from nlgrad.policy.schema import PolicyEntry, id_sort_key

if TYPE_CHECKING:  # pragma: no cover
    from nlgrad.policy.memory import PolicyMemory

RENDER_FORMATS = ("text", "markdown", "json")
_CAPITALISED_WORD = re.compile(r"^([A-Z])([a-z]+)\b(?!['’])")


def _lower_first(text: str) -> str:
    """"If the door ..." -> "if the door ..." after "When ..., ". Acronyms, "I" and names like "DSPy" are kept."""
    return _CAPITALISED_WORD.sub(lambda m: m.group(1).lower() + m.group(2), text, count=1)


def render_line(entry: PolicyEntry) -> str:
    lines = entry.text.split("\n")
    if entry.when:
        head = f"- When {entry.when}, {_lower_first(lines[0])}"
    else:
        head = f"- {lines[0]}"
    rest = [("  " + line) if line.strip() else "" for line in lines[1:]]
    return "\n".join([head, *rest])


def ordered_active(entries: Iterable[PolicyEntry]) -> list[PolicyEntry]:
    """Active entries in render order: utility descending, then id in natural order."""
    return sorted((e for e in entries if e.active), key=lambda e: (-e.utility, id_sort_key(e.id)))


def render_entries(entries: Iterable[PolicyEntry]) -> str:
    return "\n".join(render_line(e) for e in ordered_active(entries))


def render_markdown(memory: "PolicyMemory", route: str | None = None) -> str:
    routes = [route] if route is not None else memory.routes()
    sections = []
    for name in routes:
        body = memory.render(name) or "_no active entries_"
        sections.append(f"### `{name}` (policy v{memory.version})\n\n{body}\n")
    if not sections:
        return "_this policy has no routes_\n"
    return "\n".join(sections)


def render_json(memory: "PolicyMemory", route: str | None = None) -> str:
    def one(name: str) -> dict:
        return {
            "route": name,
            "text": memory.render(name),
            "entries": [e.model_dump(mode="json") for e in ordered_active(memory.entries(name))],
        }

    if route is not None:
        data: dict = {"program": memory.program, "benchmark": memory.benchmark, "version": memory.version, **one(route)}
    else:
        data = {"program": memory.program, "benchmark": memory.benchmark, "version": memory.version,
                "routes": {name: one(name) for name in memory.routes()}}
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_text_all(memory: "PolicyMemory") -> str:
    """Every route, each under a ``[route]`` header line (for humans; a module only ever gets one route)."""
    chunks = [f"[{name}]\n{memory.render(name)}".rstrip("\n") for name in memory.routes()]
    return "\n\n".join(chunks)
