"""Confirming an irreversible action before it is played: the ``twx.confirm`` route of ``twx_scaffolded``.

Some actions cannot be undone and decide the episode: TWX ``cooking`` ends the game when an ingredient is cooked
with an appliance the recipe does not ask for (``cook red potato in oven`` roasts it, the recipe said grill), and a
ScienceWorld ``focus on`` a wrong thing ends the task at -100. A small agent picks from a long action list mostly
by position (see ``scripts/agent_reply_stats.py``), so a lesson in its act prompt rarely decides such a pick. When
the agent picks an action of an irreversible *family* (the ``irreversible`` patterns of the program's game knowledge,
``nlgrad.programs.game_knowledge``: the actions sharing the pattern's key, e.g. every ``cook red potato in ...`` or
every cut of the red potato), a second module sees only that choice: the task, what the agent read, the family's
actions and "none of these yet", with its own route's lessons.

It is asked twice, with the options in two orders (:func:`confirm_orders`: the family then "none"; "none" then the
family). A model that answers by position names different options in the two, so an irreversible action is
played only when both answers name it (:func:`agreed_choice`); otherwise, or on "none", the family is set aside in
that state and the first untried shown action that is in no irreversible family is played (the act's pick, once no
such action is left).

The knowledge such a choice needs (which appliance roasts) is what a policy supplies, and it is a route-local
correction the critic can aim at this node: ``scripts/probe_agent_knowledge.py --with-lesson`` measures whether the
agent uses a lesson shown next to the question.
"""

from __future__ import annotations

import re
from typing import Any

CONFIRM_ROUTE = "twx.confirm"
NONE_OF_THESE = "none of these yet: do something else first"
_NUMBER = re.compile(r"\d+")


def family_of(action: str, actions: list[str], patterns: tuple[str, ...]) -> list[str]:
    """The actions of ``actions`` in the irreversible family of ``action``, in their given order; [] when no pattern
    matches ``action``. The first pattern that matches ``action`` decides: the family is every action that pattern
    matches with the same key, the text of its ``obj`` group where it has one (``(?:slice|dice|chop) (?P<obj>.+)$``:
    the three cuts of one ingredient), else the whole match (``focus on ``: every focus)."""
    for pattern in patterns:
        compiled = re.compile(pattern)
        match = compiled.match(action)
        if match:
            key = _key(match)
            family = [a for a in actions if (other := compiled.match(a)) and _key(other) == key]
            return family if action in family else [action, *family]
    return []


def is_irreversible(action: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``action`` belongs to an irreversible family (one of ``patterns`` matches it)."""
    return any(re.match(pattern, action) for pattern in patterns)


def _key(match: re.Match[str]) -> str:
    return match.group("obj") if "obj" in match.re.groupindex else match.group(0)


def confirm_orders(family: list[str]) -> tuple[list[str], list[str]]:
    """The two option lists a pick is confirmed with: the family then :data:`NONE_OF_THESE`, and the same list
    rotated by one (:data:`NONE_OF_THESE` first). No list position names the same option in both, so only an answer
    that follows the options' text can agree with itself."""
    return [*family, NONE_OF_THESE], [NONE_OF_THESE, *family]


def agreed_choice(picks: list[str | None]) -> str | None:
    """The option every answer names; None when they differ or one was unparsable (nothing is confirmed)."""
    return picks[0] if picks and picks[0] is not None and all(p == picks[0] for p in picks) else None


def parse_confirmation(text: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The option a reply names: its first list number in range, else the option whose text it contains (the
    longest), else ``None`` (reported as ``match: "none"``; the program then keeps the act's pick)."""
    options: list[str] = inputs["options"]
    reply = " ".join(text.strip().lower().split())
    number = _NUMBER.search(reply)
    if number and 1 <= int(number.group()) <= len(options):
        index = int(number.group()) - 1
        return {"index": index, "action": options[index], "match": "number"}
    contained = [i for i, option in enumerate(options) if option.lower() in reply]
    if contained:
        index = max(contained, key=lambda i: len(options[i]))
        return {"index": index, "action": options[index], "match": "text"}
    return {"index": None, "action": None, "match": "none"}
