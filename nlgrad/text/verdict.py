"""A claim verdict read from free text: SUPPORTED or NOT_SUPPORTED (HoVer's labels), by the first cue word.

The verifying program parses its LM reply with :func:`parse_label`, and the benchmark's metric reads an output the
same way, so both agree on what a reply says."""

from __future__ import annotations

import re
from typing import Any

from nlgrad.text.clean import as_text

LABELS = ("SUPPORTED", "NOT_SUPPORTED")

# Negative cues come first so that, at one position, "not supported" wins over "supported".
_LABEL_CUES = re.compile(
    r"\b(?P<neg>not supported|unsupported|not support|not enough|insufficient|refuted?|refutes|contradict\w*|"
    r"false|incorrect|not true|untrue|wrong|no)\b|\b(?P<pos>supported|supports?|true|correct|yes|verified|accurate)\b"
)


def parse_label(text: Any) -> dict[str, Any]:
    """Map free text to SUPPORTED / NOT_SUPPORTED by its first cue word; never raises.

    "NOT_SUPPORTED.", "Not supported", "false", "No" -> NOT_SUPPORTED; "SUPPORTED", "True", "yes" -> SUPPORTED.
    No cue at all (empty, junk) -> NOT_SUPPORTED with ``matched`` None (nothing supports the claim).
    """
    raw = as_text(text.get("label") if isinstance(text, dict) else text)
    flat = re.sub(r"[_\-]+", " ", raw.lower())
    match = _LABEL_CUES.search(flat)
    if match is None:
        return {"label": "NOT_SUPPORTED", "matched": None}
    return {"label": "NOT_SUPPORTED" if match.group("neg") else "SUPPORTED", "matched": match.group(0)}
