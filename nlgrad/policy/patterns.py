"""The ``match`` patterns of conditional entries: how one is compiled and what a valid one is.

A plain word or phrase matches as whole words (``json`` does not match ``jsonl``); anything else is a regular
expression. Both are case-insensitive. The schema validates patterns here; :mod:`nlgrad.policy.relevance` matches
them against a module call's input.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_PATTERNS = 12
MAX_PATTERN_CHARS = 200
_WORDISH = re.compile(r"^[\w][\w\s'\-]*$")


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A plain word or phrase matches as whole words (``json`` does not match ``jsonl``); anything else is a regular
    expression. Both are case-insensitive."""
    if _WORDISH.match(pattern):
        return re.compile(r"\b" + r"\s+".join(map(re.escape, pattern.split())) + r"\b", re.IGNORECASE)
    return re.compile(pattern, re.IGNORECASE)


def check_pattern(pattern: str) -> str:
    """Validate one ``match`` pattern; raises ValueError with the reason."""
    pattern = pattern.strip()
    if not pattern:
        raise ValueError("a match pattern must not be empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"a match pattern is limited to {MAX_PATTERN_CHARS} characters")
    try:
        compile_pattern(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression ({exc})") from None
    return pattern


def check_patterns(value: object) -> object:
    """Validate a ``match`` field: a pattern or a list of at most ``MAX_PATTERNS``; other shapes are left for the
    field's type check to report."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        if len(value) > MAX_PATTERNS:
            raise ValueError(f"an entry has at most {MAX_PATTERNS} match patterns")
        return [check_pattern(v) if isinstance(v, str) else v for v in value]
    return value
