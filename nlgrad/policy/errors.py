"""Errors of the policy-memory layer. Each names the file, the field and the offending value."""

from __future__ import annotations

from pathlib import Path

from nlgrad.errors import NlgradError

_VALUE_LIMIT = 120


def short_repr(value: object, limit: int = _VALUE_LIMIT) -> str:
    """``repr(value)`` cut to ``limit`` characters so an error message never embeds a whole file."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more chars]"


class PolicyFileError(NlgradError):
    """A policy file (version file, hand-written YAML, manifest, prompt block) is unreadable or invalid.

    The message always has the shape ``<file>: <problem> | field: <dotted.path> | value: <repr>`` so a user can find
    and fix the offending line without a traceback.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, field: str | None = None,
                 value: object = None, has_value: bool = True):
        self.path = str(path) if path is not None else None
        self.field = field
        self.value = value
        self.problem = message
        parts = [f"{self.path}: {message}" if self.path else message]
        if field is not None:
            parts.append(f"field: {field or '<root>'}")
        if has_value:
            parts.append(f"value: {short_repr(value)}")
        super().__init__(" | ".join(parts))


class PolicyUpdateError(NlgradError):
    """Operations could not be parsed as a policy update (used by :func:`parse_operations`)."""
