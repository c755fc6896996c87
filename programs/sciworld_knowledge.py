"""ScienceWorld game knowledge of the scaffolded program (``twx_scaffolded``): which of the game's valid actions a
small agent is shown, in which order, and which irreversible ones the task's words settle.

The environment (``nlgrad.benchmarks.sciworld``) reports the game's own valid actions, 100-1500 per state; everything
here is computed by the program from what it sees (the task text, the room description, the inventory, the game's
messages), and is measured as part of the program's own floor (the program with a constant reply).

- :func:`select_actions` keeps a bounded, ranked list (``MAX_ACTIONS`` = 20): travel (``go to`` neighbouring rooms,
  teleport to the room the task names or to unvisited rooms), ``focus on``/``pick up``/``open``/``activate``/``read``
  an object, ``move``/``use`` of or onto something the task names or the agent holds, and ``wait1``, each kind under a
  quota, scored by overlap with the task's words. A ``focus on`` an object that shares no word with the task is
  listed after every other kind (``UNRELATED_FOCUS``); words that only name the destination ("move it to the red
  box") or any object ("the substance") do not count for a ``focus on``, and neither does a thing the task names as a
  *later* focus (the substance before the thermometer). The thing the task names as its next focus (the thermometer;
  the substance to melt) comes first once it is in sight, with taking it, and no other focus is listed; until then
  travel ranks first (to a room where it was seen, else to unvisited ones), or opening containers where the game
  lists it out of sight (the ice cream in a closed freezer). A move to the destination ranks low until the focuses
  are made, and putting a held thing down where the task names nothing ranks low.
- :func:`settled_by_task` names the irreversible actions the task's own words decide (``First, focus on the
  thermometer.``; a move to the task's one destination once its focuses are made): the program plays them without
  its confirm module. A move to one of two destinations (use-thermometer's boxes, by temperature) is confirmed.
- :func:`is_reading`: a thermometer's reading of a thing the task names, which the confirm module is shown.
- :class:`ScienceWorldView` follows one episode (rooms seen, focuses the game accepted, the latest reading) and
  applies the three to each observation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nlgrad.runtime.protocols import Observation

MAX_ACTIONS = 20
_WORD = re.compile(r"[a-z]+")
_STOP = {"the", "a", "an", "to", "and", "it", "is", "your", "task", "of", "in", "on", "once", "you", "for", "with",
         "that", "this", "then", "first", "next", "which", "are", "its", "will", "be", "take", "actions", "cause",
         "there", "if", "or", "located", "around", "also", "some", "might", "found", "near"}
_VERBS = ("teleport to ", "go to ", "focus on ", "pick up ", "put down ", "look at ", "look in ", "open ", "close ",
          "activate ", "deactivate ", "read ", "eat ", "flush ", "mix ", "move ", "use ", "pour ", "dunk ",
          "connect ", "disconnect ")
_PAIR = {"move ": " to ", "use ": " on ", "pour ": " into ", "dunk ": " into ", "connect ": " to "}


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


_DESTINATION = re.compile(r"\b(?:move|place|put) it (?:to|in|into|on) (?:the |a )?([a-z ]+?)(?=\.|,| in the |$)")


def destination_words(task_text: str) -> set[str]:
    """Words that name only where the task's object must end up ("move it to the red box": red, box). Focusing on
    the destination is never the task's focus, though it shares words with the task."""
    lower = task_text.lower()
    named = set().union(*[_words(m) for m in _DESTINATION.findall(lower)] or [set()])
    rest = _DESTINATION.sub(" ", lower)
    return named - _words(rest)


_FOCUS_TARGET = re.compile(r"\bfocus on (?:the |a |an )?([a-z0-9 ()]+?)(?=\.|,|$)")
# Words a task uses for whatever its object is ("focus on the substance"): they name no particular object.
_GENERIC = {"substance", "thing", "object"}


def focus_targets(task_text: str) -> list[set[str]]:
    """The words of each thing the task says to focus on, in order ("First, focus on the thermometer. Next, focus
    on the unknown substance B." -> [{thermometer}, {unknown, b}]); generic words such as "substance" dropped."""
    return [_words(m) - _GENERIC for m in _FOCUS_TARGET.findall(task_text.lower())]


# "Your task is to melt ice cream. First, focus on the substance.": the generic focus names the task's object.
_TASK_OBJECT = re.compile(r"\byour task is to (?:melt|boil|freeze) (?:the |a |an )?([a-z0-9 ]+?)(?=\.|,|$)")


def next_focus_words(task_text: str, focused: int = 0) -> set[str]:
    """The words that name the next thing the task says to focus on, after ``focused`` accepted focuses: the
    thermometer, then "unknown substance b" as {unknown} (one-letter words dropped: the simulator's object names
    drop them, "unknown substance"); for a generic "focus on the substance" the object of "Your task is to melt X".
    Empty when the task names no particular thing (find-living-thing's "the thing") or every focus is done, and
    when the words are a description ("the animal with the longest life span") rather than a name: more than three."""
    targets = focus_targets(task_text)
    if focused >= len(targets):
        return set()
    words = {w for w in targets[focused] if len(w) > 1}
    if not words:
        named = _TASK_OBJECT.search(task_text.lower())
        words = {w for w in _words(named.group(1)) if len(w) > 1} if named else set()
    return words if len(words) <= 3 else set()


def named_things(task_text: str) -> list[set[str]]:
    """:func:`next_focus_words` for each of the task's focuses, in order (empty sets for unnamed ones)."""
    return [next_focus_words(task_text, i) for i in range(len(focus_targets(task_text)))]


def _head(obj: str) -> set[str]:
    """The words of what an object is, not where: 'cup containing ice cream' -> {cup}, 'soap in kitchen' -> {soap}."""
    return _words(re.split(r" (?:containing|in|on) ", obj)[0])


def settled_by_task(action: str, task_text: str, focused: int = 0) -> bool:
    """Whether the task's own words settle ``action``, irreversible as it is: a ``focus on`` the object the task
    names as its next focus (every word of :func:`next_focus_words` in the object's name), or, once every focus is
    made, a move to the task's one destination ("Then, move it to the red box"). A move to one of two destinations
    (use-thermometer's "above 50.0 degrees ... the green box", "below ... the blue box") is the agent's choice."""
    verb, obj, target = _parse(action)
    if verb == "focus on ":
        words = next_focus_words(task_text, focused)
        return bool(words) and words <= _head(obj)
    places = {" ".join(_words(p)) for p in _DESTINATION.findall(task_text.lower())}
    return (verb == "move " and len(places) == 1 and focused >= len(focus_targets(task_text))
            and _words(target) == set(next(iter(places)).split()))


_MEASURED = "measures a temperature of"


def is_reading(action: str, message: str, task_text: str) -> bool:
    """Whether ``message`` is a thermometer's reading of a thing the task names ("use thermometer on unknown
    substance" -> "the thermometer measures a temperature of 31 degrees celsius"): what the agent must know when it
    chooses where the thing goes. A reading of anything else (the blue box) is not."""
    verb, _, measured = _parse(action)
    return _MEASURED in message and verb == "use " and any(
        words and words <= _head(measured) for words in named_things(task_text))


def _parse(action: str) -> tuple[str, str, str]:
    """'move apple in bowl to red box' -> ('move ', 'apple in bowl', 'red box'); unknown verbs -> (action, '', '')."""
    for verb in _VERBS:
        if action.startswith(verb):
            rest = action[len(verb):]
            sep = _PAIR.get(verb)
            if sep and sep in rest:
                first, _, second = rest.rpartition(sep)
                return verb, first, second
            return verb, rest, ""
    return action, "", ""


def _held(inventory: str) -> set[str]:
    """Names of what the agent holds, from the inventory text ('\ta thermometer, currently ...' -> 'thermometer')."""
    names = set()
    for line in inventory.splitlines()[1:]:
        name = re.split(r"[,(]", line.strip().lower())[0].strip()
        name = re.sub(r"^(a|an|the|some)\s+", "", name)
        if name and name != "nothing":
            names.add(name)
    return names


def select_actions(valid: list[str], task_text: str, room: str, visited: list[str], look: str = "",
                   inventory: str = "", limit: int = MAX_ACTIONS, focused: int = 0,
                   seen: dict[str, str] | None = None) -> list[str]:
    """A bounded, useful subset of ScienceWorld's valid actions (see the module docstring), best first.

    Each kind of action has a quota (``QUOTAS``) filled by its best-scored candidates, so no single kind (there are
    hundreds of ``move`` pairs) crowds out the others; ``wait1`` keeps the last slot. Scores: overlap of an
    object's name with the task's words; things held (from ``inventory``) in a ``move``/``use``, more so as its
    target; appliances (``look`` says "which is turned on/off") as the target of ``move``. ``seen`` maps the rooms
    visited to what was in them (their ``look``), for the search for the task's next focus.
    """
    task_words = _words(task_text)
    task_lower = task_text.lower()
    teleports = {_parse(a)[1] for a in valid if a.startswith("teleport to ")}
    neighbours = {obj for a in valid if a.startswith("go to ") and "door" not in (obj := _parse(a)[1])}
    rooms = teleports | neighbours
    skip = rooms | {"agent", "air", "inventory", room}
    holding = _held(inventory)
    # Appliances (a stove, a sink: ``look`` says "which is turned on/off") matter where the task changes a state.
    appliances = set(re.findall(r"\ban? ([a-z ]+?), which is turned", look.lower())) if _TASK_OBJECT.search(
        task_lower) else set()

    def excluded(obj: str) -> bool:
        return not obj or obj in skip or "door" in obj

    def held(obj: str) -> bool:  # referents drop trailing letters: 'unknown substance' for 'unknown substance b'
        return obj.endswith(" in inventory") or any(h == obj or h.startswith(obj + " ") for h in holding)

    destinations = destination_words(task_text)
    focus_words = task_words - destinations - _GENERIC
    next_words = next_focus_words(task_text, focused)
    # Where the thing the task names as its next focus is neither in sight nor held, looking for it comes first:
    # opening containers where the simulator lists it anyway (the ice cream in a closed freezer), else travelling.
    in_sight = _words(f"{look} {inventory}")
    visible = bool(next_words) and next_words <= in_sight
    hidden = not visible and bool(next_words) and any(
        next_words <= _head(_parse(a)[1]) for a in valid if a.startswith(("focus on ", "pick up ")))
    search = bool(next_words) and not visible and not hidden
    targets = focus_targets(task_text)
    named = named_things(task_text)
    later_targets = set().union(*targets[focused + 1:]) - set().union(*targets[: focused + 1]) if targets else set()

    def relevance(obj: str, words: set[str] = task_words) -> float:
        rel = 3.0 * len(words & _words(obj))
        if (" in " in obj and not obj.endswith(" in inventory")) or "containing" in obj:
            rel -= 1.0  # nested objects: reachable, but rarely the first thing to try
        return rel

    by_kind: dict[str, dict[str, float]] = {}
    for action in valid:
        verb, obj, target = _parse(action)
        kind = verb
        if verb in ("teleport to ", "go to "):
            if obj not in rooms or obj == room or (verb == "teleport to " and obj in neighbours):
                continue
            kind = "travel"
            score = 3.0 if obj in task_lower else -1.0 if obj in visited else 1.5 if verb == "go to " else 1.0
            if search:  # to a room where the thing was seen, else to one not visited yet
                score += (SEARCH_BONUS + 2.0 if next_words <= _words((seen or {}).get(obj, ""))
                          else SEARCH_BONUS if obj not in visited else 0.0)
        elif verb in ("focus on ", "pick up ", "open ", "activate ", "read "):
            if excluded(obj) or (verb == "pick up " and held(obj)):
                continue
            if verb == "focus on " and (next_words and not next_words <= _head(obj) or len(targets) <= focused):
                continue  # the task names its next focus and this is another thing (not "the animal with the
                # longest life span": that names none), or every focus is made
            score = relevance(obj, focus_words if verb == "focus on " else task_words)
            if verb == "focus on " and (score <= 0 or _words(obj) & later_targets or hidden):
                score = UNRELATED_FOCUS  # irreversible: never listed above safer actions unless the task names it
                # (and names it as the next thing to focus on: the thermometer before the substance)
            elif verb == "focus on " and visible:  # (any other focus is not listed)
                score += NAMED_FOCUS_BONUS
            elif verb == "pick up " and any(words and words <= _head(obj) and words <= in_sight
                                            for words in named[: focused + 1]):
                score += NAMED_PICK_UP_BONUS  # a thing the task names for a focus: kept at hand (the thermometer)
            elif verb == "open " and hidden:
                score += SEARCH_BONUS
            elif verb == "activate " and obj in appliances:
                score += HEAT_BONUS  # a heat source, where the task changes a state of matter
        elif verb in ("move ", "use "):
            if excluded(obj) or excluded(target) or obj == target or (verb == "use " and not held(obj)):
                continue
            if not held(target) and ((" in " in target) or "containing" in target):
                continue
            if not (task_words & _words(obj + " " + target) or held(target)
                    or (held(obj) and target in appliances)):
                continue  # e.g. moving whatever is held to any piece of furniture
            score = (relevance(target) + relevance(obj) / 2 + (1.0 if held(obj) or held(target) else 0.0)
                     + (1.0 if held(target) else 0.0) + (0.5 if target in appliances else 0.0))
            if verb == "use " and any(words and words <= _head(target) for words in named[:focused]):
                score += MEASURE_BONUS  # a held instrument on a thing the task named and that is focused
            if verb == "move " and held(obj) and relevance(target) <= 0 and target not in appliances:
                score += PUT_DOWN_PENALTY  # putting a held thing down somewhere the task does not name undoes a take
            elif verb == "move " and focused < len(targets) and _words(target) & destinations:
                score += PUT_DOWN_PENALTY  # the task's destination comes after its focuses ("Then, move it to")
        else:
            continue
        by_kind.setdefault(kind, {})[action] = score
    chosen: dict[str, float] = {}
    for kind, candidates in by_kind.items():
        best = sorted(candidates, key=lambda a: (-candidates[a], a))[: QUOTAS.get(kind, 2)]
        chosen.update({a: candidates[a] + KIND_BONUS.get(kind, 0.0) for a in best})
    ordered = sorted(chosen, key=lambda a: (-chosen[a], a))[: max(0, limit - 1)]
    if "wait1" in valid and limit > 0:
        ordered.append("wait1")
    return ordered


# How many actions of each kind a list may hold (before the overall limit), and a small bonus that orders kinds
# whose relevance ties (travel and focus first, then taking things, then the rest).
QUOTAS = {"travel": 6, "focus on ": 7, "pick up ": 3, "move ": 4, "use ": 2, "open ": 2, "activate ": 2,
          "read ": 1}
# A "focus on" an object that shares no word with the task: a wrong focus ends the episode at -100, and a small agent
# tends to pick the first listed action, so these go after every other kind (still listed: the task may not name its
# target, e.g. find-living-thing).
UNRELATED_FOCUS = -3.0
# The focus the task names as its next one ("First, focus on the thermometer.") goes first, taking that thing just
# after it; while it is neither here nor held, unvisited rooms rank above the other kinds (see select_actions).
NAMED_FOCUS_BONUS = 20.0
NAMED_PICK_UP_BONUS = 10.0
SEARCH_BONUS = 6.0
PUT_DOWN_PENALTY = -6.0
MEASURE_BONUS = 3.0  # using a held instrument (the thermometer) on the focused thing
HEAT_BONUS = 3.0  # activating an appliance where the task changes a state of matter (melt)
KIND_BONUS = {"travel": 0.0, "focus on ": 1.0, "pick up ": 0.9, "move ": 0.5, "use ": 0.5, "open ": 0.6,
              "activate ": 0.7, "read ": 0.4}


_ROOM = re.compile(r"called the ([^.]+)\.")


def room_of(look: str) -> str:
    """The room a ScienceWorld room description names ("This room is called the kitchen." -> kitchen), or ''."""
    match = _ROOM.search(look)
    return match.group(1) if match else ""


@dataclass
class ScienceWorldView:
    """What the scaffolded program remembers of one ScienceWorld episode, and the action list it shows from it.

    Call :meth:`observe` with every observation (after the reset, with no action; after a step, with the action
    played). ``focused`` counts the ``focus on`` actions the game accepted (its message starts "You focus on"),
    ``seen`` maps the rooms visited to their latest description (in the order first visited), and ``reading`` is the
    game's message when the last action measured a thing the task names (else '')."""

    task_text: str
    limit: int = MAX_ACTIONS
    focused: int = 0
    seen: dict[str, str] = field(default_factory=dict)
    reading: str = ""

    def observe(self, observation: Observation, action: str | None = None) -> tuple[list[str], list[str]]:
        """The actions to show for ``observation`` (:func:`select_actions`, best first) and those of them the task's
        words settle (:func:`settled_by_task`)."""
        info = observation.info
        look, inventory = info.get("look", ""), info.get("inventory", "")
        message = info.get("message", "")
        room = room_of(look)
        if room:
            self.seen[room] = look
        action = " ".join(str(action or "").split())
        if action.startswith("focus on ") and message.lower().startswith("you focus on"):
            self.focused += 1
        self.reading = message if action and is_reading(action, message, self.task_text) else ""
        actions = select_actions(list(observation.valid_actions), self.task_text, room, list(self.seen), look,
                                 inventory, self.limit, self.focused, self.seen)
        settled = [a for a in actions if settled_by_task(a, self.task_text, self.focused)]
        return actions, settled
