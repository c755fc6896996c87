"""The text of an ``example`` entry: a short worked input -> output, formatted deterministically.

An example entry holds what a module received and what it replied in a successful rollout (e.g. a demo that DSPy's
BootstrapFewShot selected). :func:`format_example` writes it as ``Input: ...`` / ``Output: ...`` lines (several
input fields as ``name: value`` lines under ``Input:``; multi-line values continue on indented lines); long values
keep their head and tail around ``[...]`` so the text stays within :data:`MAX_EXAMPLE_CHARS`.
:func:`nlgrad.policy.render_line` introduces it with ``- Example:``. :func:`split_example` reads the text back as
an (input, output) pair, which the ``demos`` placement shows as a prior user / assistant turn.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from nlgrad.policy.schema import MAX_EXAMPLE_CHARS

DEFAULT_FIELD_CHARS = 600
_GAP = " [...] "


def value_text(value: Any) -> str:
    """A field value as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def elide_middle(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its head (two thirds) and tail around ``[...]`` (an example
    keeps its start and its end; :func:`nlgrad.text.clip` keeps only the start)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    room = max(2, limit - len(_GAP))
    head, tail = room * 2 // 3, room - room * 2 // 3
    return text[:head].rstrip() + _GAP + text[-tail:].lstrip()


def _field(label: str, value: str, indent: str) -> list[str]:
    lines = [line.rstrip() for line in value.split("\n")]
    if len(lines) == 1:
        return [f"{indent}{label}: {lines[0]}"]
    return [f"{indent}{label}:", *(f"{indent}  {line}" if line.strip() else "" for line in lines)]


def _format(inputs: Mapping[str, Any], output: Any, limit: int) -> str:
    fields = [(str(k), elide_middle(value_text(v), limit)) for k, v in inputs.items()]
    if len(fields) == 1:
        lines = _field("Input", fields[0][1], "")
    else:
        lines = ["Input:", *(line for name, value in fields for line in _field(name, value, "  "))]
    lines += _field("Output", elide_middle(value_text(output), limit), "")
    return "\n".join(lines)


def format_example(inputs: Mapping[str, Any], output: Any, *, field_chars: int = DEFAULT_FIELD_CHARS) -> str:
    """The entry text of a worked example: ``inputs`` (a module call's template values) -> ``output`` (its reply).

    Each value is clipped to ``field_chars`` characters; if the whole text is still longer than
    :data:`MAX_EXAMPLE_CHARS`, the per-field limit is halved until it fits."""
    limit = max(40, field_chars)
    text = _format(inputs, output, limit)
    while len(text) > MAX_EXAMPLE_CHARS and limit > 40:
        limit = max(40, limit // 2)
        text = _format(inputs, output, limit)
    return text[:MAX_EXAMPLE_CHARS]


def split_example(text: str) -> tuple[str, str] | None:
    """An example entry's text as ``(input, output)``: the text between its first ``Input:`` line and its last
    unindented ``Output:`` line, and what follows that; one-field values inline, several fields (or multi-line values)
    indented under ``Input:`` are dedented by two spaces. None when the text is not in that form."""
    lines = text.strip("\n").split("\n")
    if not lines or not lines[0].startswith("Input:"):
        return None
    out_at = max((i for i, line in enumerate(lines) if line.startswith("Output:")), default=None)
    if out_at is None or out_at == 0:
        return None
    head = lines[0][len("Input:"):].strip()
    body = [line[2:] if line.startswith("  ") else line for line in lines[1:out_at]]
    first = lines[out_at][len("Output:"):].strip()
    rest = [line[2:] if line.startswith("  ") else line for line in lines[out_at + 1:]]
    user = "\n".join(([head] if head else []) + body).strip()
    reply = "\n".join(([first] if first else []) + rest).strip()
    return (user, reply) if user and reply else None
