"""Lenient normalizers for fields of optimizer LM replies (used as pydantic ``mode="before"`` validators)."""

from __future__ import annotations

from typing import Any


def squash_or_none(value: Any) -> str | None:
    """Whitespace collapsed to single spaces; None or an empty result is None."""
    if value is None:
        return None
    value = " ".join(str(value).split())
    return value or None
