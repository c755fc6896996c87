"""A whole policy in the formats of ``nlgrad policy render --format``: text (every route), markdown and JSON."""

from __future__ import annotations

import json

from nlgrad.policy.memory import PolicyMemory
from nlgrad.policy.render import ordered_active

RENDER_FORMATS = ("text", "markdown", "json")


def render_markdown(memory: PolicyMemory, route: str | None = None) -> str:
    routes = [route] if route is not None else memory.routes()
    sections = []
    for name in routes:
        body = memory.render(name) or "_no active entries_"
        sections.append(f"### `{name}` (policy v{memory.version})\n\n{body}\n")
    if not sections:
        return "_this policy has no routes_\n"
    return "\n".join(sections)


def render_json(memory: PolicyMemory, route: str | None = None) -> str:
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


def render_text_all(memory: PolicyMemory) -> str:
    """Every route, each under a ``[route]`` header line (for humans; a module only ever gets one route)."""
    chunks = [f"[{name}]\n{memory.render(name)}".rstrip("\n") for name in memory.routes()]
    return "\n\n".join(chunks)
