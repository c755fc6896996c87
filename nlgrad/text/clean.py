"""Plain-text helpers: :func:`clip` (shorten text for a prompt, a message or a record), :func:`as_text` (any value
as text) and :func:`clean_reply` (the usable first line of an LM reply). None of them raises on odd input."""

from __future__ import annotations

import re
from typing import Any


def clip(text: Any, limit: int, *, squash: bool = True) -> str:
    """``text`` cut to ``limit`` characters, ending in "..." when it was longer. None becomes "" and other values
    their ``str``; with ``squash`` (the default) every run of whitespace becomes one space first, so the text is one
    line."""
    text = "" if text is None else text if isinstance(text, str) else str(text)
    if squash:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def as_text(value: Any) -> str:
    """Agent output as a string: None -> "", dicts -> their ``answer`` field, everything else -> ``str``."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return as_text(value.get("answer"))
    if isinstance(value, (list, tuple)):
        return " ".join(as_text(v) for v in value)
    return value if isinstance(value, str) else str(value)


_PREFIX = re.compile(r"^\s*(?:(?:final answer|short answer|answer|search query|query|search|keywords|response|"
                     r"output|label)(?:\s*:|\s+-\s)|a\s*:)\s*", re.IGNORECASE)
_QUOTES = "\"'`“”‘’«»*"


def clean_reply(text: Any, *, max_chars: int = 200) -> str:
    """First non-empty line of an LM reply, without prefixes ("Answer:", "Query:"), quotes, bullets or a final period.

    Never raises; returns "" for None, junk-only or empty replies.
    """
    raw = as_text(text)
    line = next((ln.strip() for ln in raw.splitlines() if ln.strip()), "")
    for _ in range(3):  # "Answer: "Paris"." -> Paris
        before = line
        line = _PREFIX.sub("", line).strip()
        line = line.lstrip("-•>#").strip()
        line = line.strip(_QUOTES).strip()
        line = re.sub(r"[.;,!]+$", "", line).strip()
        if line == before:
            break
    return line[:max_chars].strip()
