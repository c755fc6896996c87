"""Delimited policy blocks inside deployed prompt text (prompt files, DSPy instructions).

A block looks like::

    <!-- nlgrad:policy route=twx.act version=3 BEGIN -->
    - When the room has no coin, move through an unexplored exit.
    <!-- nlgrad:policy route=twx.act END -->

:func:`apply_block` replaces the block of a route if the text has one and appends it otherwise, so applying twice
gives the same text and everything outside the block stays byte-identical.
"""

from __future__ import annotations

import re
from pathlib import Path

from nlgrad.policy.errors import PolicyFileError


def begin_marker(route: str, version: int | None) -> str:
    ver = f" version={version}" if version is not None else ""
    return f"<!-- nlgrad:policy route={route}{ver} BEGIN -->"


def end_marker(route: str) -> str:
    return f"<!-- nlgrad:policy route={route} END -->"


def _patterns(route: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    name = re.escape(route)
    return (re.compile(rf"<!-- nlgrad:policy route={name}(?: version=\d+)? BEGIN -->"),
            re.compile(rf"<!-- nlgrad:policy route={name} END -->"))


def find_block(text: str, route: str, *, source: str | Path | None = None) -> tuple[int, int] | None:
    """``(start, end)`` of the route's block (markers included, trailing newline excluded), or None if absent."""
    begin_re, end_re = _patterns(route)
    begins = list(begin_re.finditer(text))
    ends = list(end_re.finditer(text))
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1:
        raise PolicyFileError(
            f"expected exactly one policy block for this route, found {len(begins)} BEGIN and {len(ends)} END markers",
            path=source, field=f"block route={route}", value=begins[0].group(0) if begins else ends[0].group(0))
    start, end = begins[0].start(), ends[0].end()
    if end <= start:
        raise PolicyFileError("the END marker of the policy block comes before its BEGIN marker", path=source,
                              field=f"block route={route}", value=ends[0].group(0))
    return start, end


def make_block(route: str, body: str, version: int | None, newline: str = "\n") -> str:
    lines = [begin_marker(route, version)]
    if body:
        lines.extend(body.split("\n"))
    lines.append(end_marker(route))
    return newline.join(lines)


def apply_block(text: str, route: str, body: str, version: int | None = None, *,
                source: str | Path | None = None) -> str:
    """Insert or replace the policy block of ``route`` in ``text``; idempotent; the rest is left byte-identical.

    A missing block is appended at the end, after a newline if the text does not already end with one. The block
    uses the text's line ending (``\\r\\n`` if the text has any, else ``\\n``).
    """
    newline = "\r\n" if "\r\n" in text else "\n"
    block = make_block(route, body, version, newline)
    span = find_block(text, route, source=source)
    if span is not None:
        start, end = span
        return text[:start] + block + text[end:]
    sep = "" if not text or text.endswith("\n") else newline
    return text + sep + block + newline


def remove_block(text: str, route: str, *, source: str | Path | None = None) -> str:
    """Remove the route's block (and the newline right after it); text without a block is returned unchanged."""
    span = find_block(text, route, source=source)
    if span is None:
        return text
    start, end = span
    if text.startswith("\r\n", end):
        end += 2
    elif text.startswith("\n", end):
        end += 1
    return text[:start] + text[end:]
