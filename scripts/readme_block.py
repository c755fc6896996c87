"""Rewrite the text between two marker lines of a README (the results tables the measurement scripts maintain)."""

from __future__ import annotations


def replace_block(text: str, begin: str, end: str, body: str) -> str:
    """``text`` with everything between the ``begin`` and ``end`` markers replaced by ``body``; raises SystemExit
    naming the markers when either is missing."""
    if begin not in text or end not in text:
        raise SystemExit(f"the markers {begin} and {end} are missing")
    head, rest = text.split(begin, 1)
    return f"{head}{begin}\n{body}\n{end}{rest.split(end, 1)[1]}"
