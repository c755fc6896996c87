"""Compact, bounded text views of traces for critic prompts (small models read slowly: keep them short)."""

from __future__ import annotations

from typing import Any

from nlgrad.runtime.trace import Trace
from nlgrad.text import clip


def module_view(node: dict[str, Any], *, prompt_chars: int = 700, output_chars: int = 300) -> dict[str, str]:
    """The last user message (what the module saw) and its output, clipped."""
    messages = node.get("messages") or []
    seen = messages[-1]["content"] if messages else ""
    output = node.get("output", "")
    parsed = node.get("parsed")
    if isinstance(parsed, dict) and parsed.get("action"):
        output = f"{output} -> {parsed['action']}"
    if node.get("override"):
        output = f"{output} (overridden by the program: {node['override'].get('chosen')})"
    return {"route": node["route"], "input": clip(seen, prompt_chars), "output": clip(output, output_chars),
            "error": clip(node.get("error", ""), 200)}


def episode_lines(trace: Trace, route: str, *, max_steps: int = 30, obs_chars: int = 110) -> list[dict[str, Any]]:
    """One line per call of ``route``: step number, chosen action/output and the observation it led to."""
    lines = []
    calls = trace.module_calls(route)
    for i, node in enumerate(calls, start=1):
        view = module_view(node, output_chars=80)
        after = ""
        for child in trace.children(node["id"]):
            child_node = trace.node(child)
            if child_node["kind"] == "env":
                after = clip(child_node.get("observation", ""), obs_chars)
        lines.append({"step": i, "node": node["id"], "output": view["output"], "result": after})
    if len(lines) > max_steps:  # keep the start and the end, where failures usually show
        head = max_steps // 3
        lines = lines[:head] + lines[-(max_steps - head):]
    return lines
