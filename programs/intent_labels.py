"""Reading an intent label from a reply: exact (case-insensitive) or, failing that, the nearest label.

A reply constrained by a decoding grammar arrives as a JSON string (``"card_arrival"``); a free reply may add
quotes, a trailing period or words around the label. :func:`read_label` returns ``{"label", "exact", "reply"}``:
``exact`` is False when the reply was not one of the labels and the nearest one (by character similarity) was
taken, which the intent benchmarks' metric tags ``invalid_label``.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

_WRAP = re.compile(r"^[\s\"'`*]+|[\s\"'`*.,;:!]+$")


def reply_text(text: str) -> str:
    """The label-like part of a reply: a JSON string decoded, the first line, wrapping quotes and marks removed."""
    text = (text or "").strip()
    if text.startswith('"'):
        try:
            value = json.loads(text)
            if isinstance(value, str):
                return value.strip()
        except json.JSONDecodeError:
            pass
    first = text.splitlines()[0] if text else ""
    first = re.sub(r"^(intent|label|area)\s*:\s*", "", first.strip(), flags=re.IGNORECASE)
    return _WRAP.sub("", first)


def read_label(text: str, labels: list[str]) -> dict[str, Any]:
    """``{"label": one of labels, "exact": bool, "reply": the raw reply (clipped)}``."""
    candidate = reply_text(text)
    by_lower = {label.lower(): label for label in labels}
    exact = by_lower.get(candidate.lower())
    if exact is None:  # a label the reply states with extra words around it ("the intent is card_arrival")
        found = [label for label in labels if re.search(rf"(?<![\w?]){re.escape(label)}(?![\w?])", text or "",
                                                         re.IGNORECASE)]
        exact = max(found, key=len) if len(found) >= 1 else None
    if exact is not None:
        return {"label": exact, "exact": True, "reply": (text or "")[:200]}
    lowered = candidate.lower().replace(" ", "_")
    close = difflib.get_close_matches(lowered, list(by_lower), n=1, cutoff=0.0)
    label = by_lower[close[0]] if close else labels[0]
    return {"label": label, "exact": False, "reply": (text or "")[:200]}
