"""Which valid action a model's reply names: by list number, by the action's text, by the closest text, or (where
the environment parses free text itself) as written. Shared by the scaffolded and the plain ReAct programs."""

from __future__ import annotations

import difflib
import re
from typing import Any

_NUMBER = re.compile(r"\d+")


def _closest(reply: str, lowered: list[str]) -> tuple[int | None, str]:
    close = difflib.get_close_matches(reply, lowered, n=1, cutoff=0.5)
    if close:
        return lowered.index(close[0]), "fuzzy"
    return None, "none"


def match_action(text: str, actions: list[str]) -> tuple[int | None, str]:
    """Index of the action a reply names, and how it was matched: 'number', 'text', 'fuzzy' or 'none'."""
    reply = text.strip().lower()
    number = _NUMBER.search(reply)
    if number and 1 <= int(number.group()) <= len(actions):
        return int(number.group()) - 1, "number"
    lowered = [a.lower() for a in actions]
    for i, action in enumerate(lowered):
        if action and action in reply:
            return i, "text"
    return _closest(reply, lowered)


def free_form_action(text: str, verbs: list[str]) -> str | None:
    """The reply as an action the environment parses itself (first line, starting with one of ``verbs``), or None."""
    lines = text.strip().splitlines()
    reply = " ".join(lines[0].strip().strip("`'\".").split()).lower() if lines else ""
    reply = re.sub(r"^(action|answer)\s*:\s*", "", reply)
    return reply if reply and reply.split(" ")[0] in set(verbs) else None


def match_action_text(text: str, actions: list[str]) -> tuple[int | None, str]:
    """Like :func:`match_action` for a reply that should be an action's text: the exact action, else the longest
    action the reply contains, else a bare list number, else the closest text (a number inside an action's text,
    e.g. "take 5 apples", is not read as a list position)."""
    reply = " ".join(text.strip().strip("`'\".").split()).lower()
    lowered = [a.lower() for a in actions]
    if reply in lowered:
        return lowered.index(reply), "text"
    contained = [i for i, action in enumerate(lowered) if action and action in reply]
    if contained:
        return max(contained, key=lambda i: len(lowered[i])), "text"
    if reply.isdigit() and 1 <= int(reply) <= len(actions):
        return int(reply) - 1, "number"
    return _closest(reply, lowered)


def reply_choice(text: str, actions: list[str], free_verbs: list[str] | None = None, *,
                 by_text: bool = False) -> dict[str, Any]:
    """The listed action a reply names (``index``, ``action``, and ``match``: how, see :func:`match_action`; with
    ``by_text``, :func:`match_action_text`); a reply that names none closely but starts with one of ``free_verbs``
    is the action as written (``index`` None, ``match`` ``free``)."""
    index, how = (match_action_text if by_text else match_action)(text, actions)
    if how in ("fuzzy", "none") and free_verbs:
        free = free_form_action(text, free_verbs)
        if free is not None:
            return {"index": None, "action": free, "match": "free"}
    return {"index": index, "action": actions[index] if index is not None else None, "match": how}


def parse_choice(text: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The act module's parser: :func:`reply_choice` over the listed actions of its inputs."""
    return reply_choice(text, [a["text"] for a in inputs["actions"]], inputs.get("free_verbs"),
                        by_text=bool(inputs.get("answer_text")))
