"""Lenient normalizers for fields of optimizer LM replies, and the field types that apply them before validation
(``Text``, ``OptionalText``, ``IntList``: a reply schema declares ``text: Text`` instead of repeating a validator)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator


def squash_or_none(value: Any) -> str | None:
    """Whitespace collapsed to single spaces; None or an empty result is None."""
    if value is None:
        return None
    value = " ".join(str(value).split())
    return value or None


def int_list(value: Any) -> list[int]:
    """A list of the items that read as integers (a single int or string becomes a one-item list; None -> [])."""
    if value is None:
        return []
    if isinstance(value, (int, str)):
        value = [value]
    out = []
    for v in value:
        try:
            out.append(int(v))
        except (TypeError, ValueError):
            continue
    return out


Text = Annotated[str, BeforeValidator(squash_or_none)]  # whitespace collapsed; empty is missing
OptionalText = Annotated[str | None, BeforeValidator(squash_or_none)]
IntList = Annotated[list[int], BeforeValidator(int_list)]
