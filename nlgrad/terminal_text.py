"""Text from files, data and models, shown on a terminal as text: never interpreted, never able to reorder or hide
what is printed.

Rich reads ``[red]`` in a printed string as markup and ``:x:`` as an emoji code; bidi controls (U+202E right-to-left
override and the other Trojan Source characters) reorder a line on screen, and C0/C1 controls (ESC, CR, BEL, ...)
drive the terminal or overwrite what came before. :func:`escape_controls` shows those characters as escapes
(``\\u202e``, ``\\x1b``) and leaves every other character, tab and newline alone; :func:`message_line` is the
``error: ...`` / ``warning: ...`` line every command prints (a rich ``Text``: no markup, no emoji);
:func:`escaped_copy` escapes every string of a pydantic model (what ``policy show`` prints).
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any

from pydantic import BaseModel
from rich.text import Text

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""C0 controls except tab and newline, DEL, C1 controls, the bidi marks, embeddings, overrides and isolates, and the
line / paragraph separators."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with control, bidi and separator characters written as ``\\xNN`` / ``\\uNNNN`` escapes."""
    return _UNSAFE.sub(_escape, text)


def message_line(message: object, label: str = "error:", style: str = "bold red") -> Text:
    """``label message`` as a rich Text: the label styled, the message escaped and printed as is."""
    text = Text(label, style=style)
    text.append(" " + escape_controls(str(message)))
    return text


def escaped_copy(value: Any) -> Any:
    """A copy of ``value`` (pydantic models, lists, tuples, dicts, strings) with :func:`escape_controls` applied to
    every string; models are copied without validation, enums and other values are kept. Nothing is copied where
    nothing needs escaping."""
    if isinstance(value, Enum):
        return value
    if isinstance(value, str):
        return escape_controls(value) if _UNSAFE.search(value) else value
    if isinstance(value, BaseModel):
        changes = {}
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = escaped_copy(old)
            if new is not old:
                changes[name] = new
        return value.model_copy(update=changes) if changes else value
    if type(value) in (list, tuple):
        items = [escaped_copy(v) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    if isinstance(value, dict):
        pairs = [(escaped_copy(k), escaped_copy(v)) for k, v in value.items()]
        if all(k is a and v is b for (k, v), (a, b) in zip(pairs, value.items())):
            return value
        return dict(pairs)
    return value
