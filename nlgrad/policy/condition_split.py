"""Keep an entry's condition (``when``) and the instruction it guards (``text``) apart.

Entries render as "When <when>, <text>". A proposer often repeats the condition at the head of the text ("When
writing a song, use ...") or runs the instruction into the condition ("an input asks for X, always repeat ..."),
and the rendered line then says it twice. :func:`separate_condition` removes the repetition; it never drops an
instruction that is only in one of the two fields.
"""

from __future__ import annotations

import re

from nlgrad.policy.schema import EntryKind

_LEAD = re.compile(r"^(?:when|if)\s+", re.IGNORECASE)
_SEPARATORS = " ,;:.-"
_PROBE_CHARS = 40  # how much of the text's head must reappear inside the condition to count as a run-on


def _fold(value: str) -> str:
    return " ".join(value.lower().split())


def _capitalise(value: str) -> str:
    return value[:1].upper() + value[1:]


def _without_repeated_lead(text: str, when: str) -> str:
    """"When <when>, do X" -> "Do X"; any other text is returned unchanged."""
    lead = _LEAD.match(text)
    if lead is None:
        return text
    rest = text[lead.end():]
    if not _fold(rest).startswith(_fold(when)):
        return text
    # walk the original string past the condition's words, whatever its spacing
    words, position = len(when.split()), 0
    for _ in range(words):
        match = re.match(r"\s*\S+", rest[position:])
        if match is None:
            return text
        position += match.end()
    remainder = rest[position:].lstrip(_SEPARATORS)
    return _capitalise(remainder) if remainder else text


def _without_run_on(when: str, text: str) -> str:
    """"X, always do Y" with text "Always do Y ..." -> "X"; any other condition is returned unchanged."""
    probe = _fold(text)[:_PROBE_CHARS].rstrip(_SEPARATORS)
    if len(probe) < 10:
        return when
    folded = _fold(when)
    at = folded.find(probe)
    if at <= 0 or folded[at - 1] != " ":
        return when
    head_words = len(folded[:at].split())
    head = " ".join(when.split()[:head_words]).rstrip(_SEPARATORS)
    return head or when


def separate_condition(text: str, when: str | None, kind: EntryKind = EntryKind.correction
                       ) -> tuple[str, str | None]:
    """Return ``(text, when)`` with the condition stated once, in ``when``. An ``example`` entry's text is a worked
    input -> output and is returned as it is."""
    if not when or kind == EntryKind.example:
        return text, when
    when = _without_run_on(when, text)
    return _without_repeated_lead(text, when), when
