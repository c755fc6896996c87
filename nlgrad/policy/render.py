"""Rendering: the exact, deterministic text that a module's prompt receives for a route.

One line per active entry, ordered by utility (helpful - harmful) descending, then by id in natural order::

    - When the room has no coin, move through an unexplored exit.
    - Read the task before acting.

Multi-line entries (document sections) continue on lines indented by two spaces. An ``example`` entry (a worked
input -> output) is introduced by its own line and its text follows, indented::

    - Example:
      Input: word number 3
      Output: WORD NUMBER 3

(with a condition: ``- When the task asks for a list, for example:``). A route without active entries renders as the
empty string.
"""

from __future__ import annotations

import re
from typing import Iterable

from nlgrad.policy.schema import EntryKind, PolicyEntry, id_sort_key

_CAPITALISED_WORD = re.compile(r"^([A-Z])([a-z]+)\b(?!['’])")


def _lower_first(text: str) -> str:
    """"If the door ..." -> "if the door ..." after "When ..., ". Acronyms, "I" and names like "DSPy" are kept."""
    return _CAPITALISED_WORD.sub(lambda m: m.group(1).lower() + m.group(2), text, count=1)


def render_line(entry: PolicyEntry) -> str:
    lines = entry.text.split("\n")
    if entry.kind == EntryKind.example:
        head = f"- When {entry.when}, for example:" if entry.when else "- Example:"
        return "\n".join([head, *(("  " + line) if line.strip() else "" for line in lines)])
    if entry.when:
        head = f"- When {entry.when}, {_lower_first(lines[0])}"
    else:
        head = f"- {lines[0]}"
    rest = [("  " + line) if line.strip() else "" for line in lines[1:]]
    return "\n".join([head, *rest])


def ordered_active(entries: Iterable[PolicyEntry]) -> list[PolicyEntry]:
    """Active entries in render order: utility descending, then id in natural order."""
    return sorted((e for e in entries if e.active), key=lambda e: (-e.utility, id_sort_key(e.id)))


def render_entries(entries: Iterable[PolicyEntry]) -> str:
    return "\n".join(render_line(e) for e in ordered_active(entries))


def render_call_parts(entries: list[PolicyEntry], examples_as_turns: bool) -> tuple[str, list[str], list[tuple[str, str]]]:
    """The text, the ids and the prior turns of the entries a call is shown: with ``examples_as_turns``, each
    ``example`` entry in ``Input:/Output:`` form becomes a ``(user, assistant)`` turn instead of a line."""
    from nlgrad.policy.examples import split_example

    turns = [split_example(e.text) if examples_as_turns and e.kind == EntryKind.example else None for e in entries]
    text = "\n".join(render_line(e) for e, turn in zip(entries, turns) if turn is None)
    return text, [e.id or "" for e in entries], [turn for turn in turns if turn is not None]
