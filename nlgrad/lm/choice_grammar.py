"""A decoding grammar for a reply that must be one of a few fixed strings, as llama.cpp's server reads it.

A module with ``choices`` asks for ``{"type": "json_object", "schema": {"type": "string", "enum": [...]}}``. llama.cpp
turns such a schema into a grammar that lets the model add up to 20 spaces and newlines after the closing quote, and a
small model spends them: on ``banking77`` x ``qwen2.5-coder-1.5b`` a constrained reply took 13.0 tokens and 0.71 s, the
same reply under :func:`choice_grammar` (the choice as a JSON string and nothing after it) 6.4 tokens and 0.39 s
(10 dev messages, 2 cores; ``docs/results/intent-routing-2026-12-05.md``). The grammar is sent as llama-server's own
``grammar`` field; other servers keep the JSON schema.
"""

from __future__ import annotations

import json
from typing import Any


def enum_choices(response_format: dict[str, Any] | None) -> list[str] | None:
    """The choices of a ``response_format`` whose schema is a plain string enum (None for any other format)."""
    if not isinstance(response_format, dict):
        return None
    schema = response_format.get("schema")
    if not isinstance(schema, dict) or schema.get("type") != "string" or set(schema) - {"type", "enum"}:
        return None
    choices = schema.get("enum")
    if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
        return None
    return choices


def choice_grammar(response_format: dict[str, Any] | None) -> str | None:
    """A GBNF grammar whose only sentences are the choices of ``response_format`` as JSON strings, with nothing after
    the closing quote (None where the format is not a plain string enum)."""
    choices = enum_choices(response_format)
    if choices is None:
        return None
    # each choice is a GBNF literal of its JSON form: json.dumps escapes '"' and '\\' as GBNF literals read them
    alternatives = " | ".join(_literal(json.dumps(c, ensure_ascii=False)) for c in choices)
    return f"root ::= {alternatives}"


def _literal(text: str) -> str:
    escaped = "".join("\\n" if ch == "\n" else "\\r" if ch == "\r" else "\\t" if ch == "\t"
                      else "\\" + ch if ch in '"\\' else ch for ch in text)
    return f'"{escaped}"'
