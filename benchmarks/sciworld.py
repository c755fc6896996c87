"""ScienceWorld (``scienceworld==1.2.3``, Apache-2.0, needs Java): long-horizon science procedures, run offline.

Ids: ``sciworld/find-living-thing``, ``sciworld/lifespan-longest-lived``, ``sciworld/melt`` and
``sciworld/use-thermometer`` (ScienceWorld's own task names; ``sciworld`` alone is the first). Every episode uses the
``easy`` simplifications (in 1.2.3: teleport actions, open doors, self-watering flower pots, no electrical actions;
containers such as the freezer stay closed). The package's gold paths are 3-12, ~6, ~18-23 and ~14 steps: short
enough for a small local model to make progress, and each ends with a ``focus on`` that must name the right thing.
(find-non-living-thing was left out: the agent starts every task holding an orange, which is a non-living thing.)

Splits are the package's own variation folds (``get_variations_train/dev/test``, contiguous ranges recorded in
``FOLDS`` and checked against the package by the tests): train is the whole train fold; dev and test are the first
``SUBSET_SIZE`` (20) variations of their folds, a small fixed subset (melt has only 7 dev and 9 test variations, all
used). ``tasks(split, n)`` takes the first n, so splits are deterministic and disjoint.

Scoring: ScienceWorld's score is 0-100 (partial credit for progress), and -100 when the task failed (a wrong
``focus on`` ends the episode that way). Our score is score/100 clipped to [0, 1], so a failed episode scores 0;
success is "completed with 100". The feedback names the task, the outcome (with the -100 and its last action), the
score, the steps, the last actions and the last game message.

Actions: the package lists 100-1500 valid action strings per state (every ``move``/``pour``/``use``/``look at`` pair),
far too many for a 0.5B model's prompt. ``Observation.valid_actions`` is a bounded list (``MAX_ACTIONS`` = 20, see
``select_actions``): travel (``go to`` neighbouring rooms, teleport to the room the task names or to unvisited
rooms), ``focus on``/``pick up``/``open``/``activate``/``read`` an object, ``move``/``use`` of or onto something
the task names or the agent holds, and ``wait1``, each kind under a quota, scored by overlap with the task's words;
a ``focus on`` an object that shares no word with the task is listed after every other kind (``UNRELATED_FOCUS``);
words that only name the destination ("move it to the red box") or any object ("the substance") do not count for
a ``focus on``, and neither does a thing the task names as a *later* focus (the substance before the thermometer).
The observation text is the game's message plus the room description and the inventory (a move only says "You move
to the kitchen."). Any other text is still played: ScienceWorld parses free text itself, and ``info["free_text_verbs"]``
lists its verbs for programs that pass free-form replies through (``twx_react`` does). An ambiguous request is
cancelled at once (the simulator would otherwise wait for an option number) and its options are shown;
``reset task`` is refused.

Speed (2-core machine shared with a model server, one JVM, measured on the gold paths): 4-10 steps/s; nearly all of
a step is the package enumerating valid actions (a bare simulator step runs at ~130/s). Loading + resetting a
variation takes ~0.35 s, the first start of the JVM ~1.5 s.
"""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path
from typing import Any

from nlgrad.benchmarks.episode_text import episode_outcome, last_moves
from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import Episode, MetricResult, Observation, StepResult, Task

# ScienceWorld task name -> (train start, dev start, test start, end): the package's variation folds.
FOLDS: dict[str, tuple[int, int, int, int]] = {
    "find-living-thing": (0, 150, 225, 300),
    "lifespan-longest-lived": (0, 62, 93, 125),
    "melt": (0, 14, 21, 30),
    "use-thermometer": (0, 270, 405, 540),
}
SUBSET_SIZE = 20  # dev and test use the first 20 variations of their fold
SIMPLIFICATIONS = "easy"
MAX_ACTIONS = 20
_ROOM = re.compile(r"called the ([^.]+)\.")
_WORD = re.compile(r"[a-z]+")
_STOP = {"the", "a", "an", "to", "and", "it", "is", "your", "task", "of", "in", "on", "once", "you", "for", "with",
         "that", "this", "then", "first", "next", "which", "are", "its", "will", "be", "take", "actions", "cause",
         "there", "if", "or", "located", "around", "also", "some", "might", "found", "near"}
_VERBS = ("teleport to ", "go to ", "focus on ", "pick up ", "put down ", "look at ", "look in ", "open ", "close ",
          "activate ", "deactivate ", "read ", "eat ", "flush ", "mix ", "move ", "use ", "pour ", "dunk ",
          "connect ", "disconnect ")
_PAIR = {"move ": " to ", "use ": " on ", "pour ": " into ", "dunk ": " into ", "connect ": " to "}
_MEASURED = "measures a temperature of"  # a thermometer's reading: what the agent learned, shown when it chooses
_NEVER = ("reset task", "reset")  # would wipe the task's progress and focus
_AMBIGUOUS = "Ambiguous request"


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
    named_things = [next_focus_words(task_text, i) for i in range(len(targets))]
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
            score = relevance(obj, focus_words if verb == "focus on " else task_words)
            if verb == "focus on " and (score <= 0 or _words(obj) & later_targets or hidden):
                score = UNRELATED_FOCUS  # irreversible: never listed above safer actions unless the task names it
                # (and names it as the next thing to focus on: the thermometer before the substance)
            elif verb == "focus on " and visible and next_words <= _head(obj):
                score += NAMED_FOCUS_BONUS
            elif verb == "pick up " and any(words and words <= _head(obj) and words <= in_sight
                                            for words in named_things[: focused + 1]):
                score += NAMED_PICK_UP_BONUS  # a thing the task names for a focus: kept at hand (the thermometer)
            elif verb == "open " and hidden:
                score += SEARCH_BONUS
            elif verb == "activate " and obj in appliances:
                score += 3.0  # a heat source, where the task changes a state of matter
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
            if verb == "use " and any(words and words <= _head(target) for words in named_things[:focused]):
                score += 3.0  # a held instrument on a thing the task named and that is focused: measuring it
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
# A "focus on" an object that shares no word with the task: a wrong focus ends the episode at -100, and the 0.5B agent
# tends to pick the first listed action, so these go after every other kind (still listed: the task may not name its
# target, e.g. find-living-thing).
UNRELATED_FOCUS = -3.0
# The focus the task names as its next one ("First, focus on the thermometer.") goes first, taking that thing just
# after it; while it is neither here nor held, unvisited rooms rank above the other kinds (see select_actions).
NAMED_FOCUS_BONUS = 20.0
NAMED_PICK_UP_BONUS = 10.0
SEARCH_BONUS = 6.0
PUT_DOWN_PENALTY = -6.0
KIND_BONUS = {"travel": 0.0, "focus on ": 1.0, "pick up ": 0.9, "move ": 0.5, "use ": 0.5, "open ": 0.6,
              "activate ": 0.7, "read ": 0.4}


def _import_scienceworld():
    try:
        from scienceworld import ScienceWorldEnv
    except ImportError as exc:
        raise BenchmarkError(
            "benchmark sciworld/* needs the package scienceworld (and Java): pip install 'nlgrad[sciworld]'"
            f" ({exc})"
        ) from None
    return ScienceWorldEnv


class ScienceWorldEnvironment:
    """One JVM-backed simulator, reused across the episodes of a worker thread."""

    def __init__(self, task_name: str, simplifications: str = SIMPLIFICATIONS, step_limit: int = 10000,
                 max_actions: int = MAX_ACTIONS):
        self.task_name, self.simplifications, self.max_actions = task_name, simplifications, max_actions
        cls = _import_scienceworld()
        try:
            self._env = cls("", envStepLimit=step_limit)
        except Exception as exc:  # noqa: BLE001 - usually a missing Java runtime
            raise BenchmarkError(f"could not start ScienceWorld (is Java installed?): {exc}") from None
        self.task_description = ""
        self.visited: list[str] = []
        self.seen: dict[str, str] = {}  # room -> what was there when last seen
        self.focused = 0
        self.verbs: list[str] = []  # the simulator's action verbs, known once a task is loaded
        self._last: Observation | None = None

    def _observation(self, message: str, infos: dict[str, Any], reading: bool = False) -> Observation:
        """``reading``: the message is a measurement of a thing the task names (shown when the agent chooses)."""
        look = infos.get("look", "").strip()
        inventory = infos.get("inv", "").strip()
        match = _ROOM.search(look)
        room = match.group(1) if match else ""
        if room and room not in self.visited:
            self.visited.append(room)
        if room:
            self.seen[room] = look
        text = message.strip()
        if look and look not in text:  # "You move to the outside." says nothing about what is there
            text = f"{text}\n\n{look}" if text else look
        if inventory and "nothing" not in inventory.splitlines()[-1]:
            text += f"\n\n{inventory}"
        actions = select_actions(list(infos.get("valid", [])), self.task_description, room, self.visited, look,
                                 inventory, self.max_actions, self.focused, self.seen)
        return Observation(
            text=text, valid_actions=actions,
            info={"look": look, "inventory": inventory, "room": room, "state_key": f"{look}\n{inventory}",
                  "task": self.task_description, "moves": infos.get("moves", 0), "raw_score": infos.get("score", 0),
                  "message": message.strip(), "n_valid": len(infos.get("valid", [])),
                  "free_text_verbs": self.verbs,
                  "settled_actions": [a for a in actions if settled_by_task(a, self.task_description, self.focused)],
                  **({"reading": message.strip()} if reading else {})},
        )

    def reset(self, task: Task) -> Observation:
        self._env.load(self.task_name, int(task.seed), self.simplifications)
        if not self.verbs:
            templates = self._env.get_possible_actions()  # 'focus on OBJ', 'move OBJ to OBJ', 'wait1', ...
            self.verbs = sorted({t.split(" ")[0] for t in templates if t[:1].isalpha()} - {"reset", "task"})
        obs, infos = self._env.reset()
        self.task_description = " ".join(infos.get("taskDesc", "").replace("Task Description:", "").split())
        self.visited = []
        self.seen = {}
        self.focused = 0  # how many "focus on" actions the simulator accepted
        self._last = self._observation(obs, infos)
        return self._last

    def step(self, action: str) -> StepResult:
        action = " ".join(str(action).split())
        if action.lower().startswith(_NEVER):
            obs = self._last or Observation(text="")
            text = f"The action {action!r} is not allowed in this benchmark."
            return StepResult(observation=Observation(text=f"{text}\n\n{obs.info.get('look', '')}".strip(),
                                                      valid_actions=obs.valid_actions,
                                                      info={**obs.info, "message": text}),
                              score=max(0.0, min(1.0, obs.info.get("raw_score", 0) / 100)))
        message, reward, done, infos = self._env.step(action)
        if message.startswith(_AMBIGUOUS):  # the simulator now waits for an option number: cancel, show the options
            options = [line.split("\t", 1)[-1].strip() for line in message.splitlines()[1:] if line.strip()]
            _, _, done, infos = self._env.step("")
            message = (f"Ambiguous action {action!r}: it could mean " + "; ".join(options)
                       + ". Nothing happened; name the object more exactly (e.g. 'apple in bowl').")
        raw = int(infos.get("score", 0))
        failure = raw < 0
        if action.startswith("focus on ") and message.lower().startswith("you focus on"):
            self.focused += 1
        success = bool(done) and raw >= 100
        verb, _, measured = _parse(action)
        reading = _MEASURED in message and verb == "use " and any(
            words and words <= _head(measured) for words in map(lambda i: next_focus_words(self.task_description, i),
                                                                range(len(focus_targets(self.task_description)))))
        self._last = self._observation(message, infos, reading)
        return StepResult(observation=self._last, reward=float(reward), done=bool(done or failure or success),
                          score=max(0.0, min(1.0, raw / 100)), success=success,
                          info={"failure": failure, "raw_score": raw})

    def close(self) -> None:
        try:
            self._env.close()
            self._env._gateway.java_process.wait(timeout=10)
        except Exception:  # noqa: BLE001
            pass
        self._env.close = lambda: None  # the package's __del__ closes again and fails on the dead pipe


class ScienceWorldBenchmark:
    kind = "interactive"
    default_program = "twx_react"
    default_step_cap = 30
    max_actions = MAX_ACTIONS  # read by twx_react: show the whole bounded list
    actions_ranked = True  # read by twx_react: keep select_actions' order (no second ranking by task words)
    # Read by twx_react: a wrong focus, or a move of the focused thing to the wrong box, ends the task at -100, so
    # a pick is confirmed first (unless the task's words settle it: the observation's "settled_actions").
    irreversible = (r"focus on ", r"move (?P<obj>.+) to (?:[a-z]+ )?box$")

    def __init__(self, task: str | None = "find-living-thing", simplifications: str = SIMPLIFICATIONS):
        task = task or "find-living-thing"
        if task not in FOLDS:
            raise BenchmarkError(f"unknown ScienceWorld task {task!r}; known: {', '.join(FOLDS)}")
        self.task_name = task
        self.simplifications = simplifications
        self.id = f"sciworld/{task}"

    @property
    def human_policy(self) -> Path:
        return Path(str(files("nlgrad.benchmarks").joinpath("human_policies/sciworld.yaml")))

    def variations(self, split: str) -> list[int]:
        if split not in ("train", "dev", "test"):
            raise BenchmarkError(f"unknown split {split!r} for {self.id}; use train, dev or test")
        train, dev, test, end = FOLDS[self.task_name]
        start, stop = {"train": (train, dev), "dev": (dev, test), "test": (test, end)}[split]
        if split != "train":
            stop = min(stop, start + SUBSET_SIZE)
        return list(range(start, stop))

    def tasks(self, split: str, n: int | None = None) -> list[Task]:
        chosen = self.variations(split)
        if n is not None:
            chosen = chosen[: max(0, n)]
        return [Task(id=f"{self.id}/{split}/{v}", split=split, seed=v,
                     inputs={"task": self.task_name}, meta={"variation": v, "simplifications": self.simplifications})
                for v in chosen]

    def make_env(self) -> ScienceWorldEnvironment:
        return ScienceWorldEnvironment(self.task_name, self.simplifications)

    def metric(self, task: Task, output: Any, episode: Episode | None = None) -> MetricResult:  # noqa: ARG002
        if episode is None:
            raise BenchmarkError(f"{self.id} is interactive: the metric needs the episode")
        last_obs = episode.last_observation
        info = last_obs.info if last_obs else {}
        raw = info.get("raw_score", 0)
        last = info.get("message", last_obs.text if last_obs else "")
        task_text = episode.first_observation.info.get("task", "") if episode.first_observation else ""
        success = bool(episode.success)
        if not success and raw < 0:
            outcome = (f"failed: the task ended with ScienceWorld score {raw} after {episode.steps} steps (a wrong "
                       f"'focus on' or another irreversible mistake; the last action was "
                       f"{episode.actions[-1] if episode.actions else '(none)'!r})")
        else:
            outcome = episode_outcome(episode, ended="the episode", without="completing the task",
                                      before="completing the task")
        score = 1.0 if success else 0.0 if raw < 0 else max(0.0, min(1.0, episode.score))
        feedback = (f"Task ({self.task_name}): {task_text} Outcome: {outcome}. Final score {score:.2f} "
                    f"(ScienceWorld {raw}/100). {last_moves(episode, last)}")
        return MetricResult(score=score, success=success, feedback=feedback,
                            details={"steps": episode.steps, "actions": episode.actions, "raw_score": raw})
