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
The thing the task names as its next focus (the thermometer; the substance to melt) comes first once it is in sight,
with taking it; until then travel ranks first (to a room where it was seen, else to unvisited ones), or opening
containers where the package lists it out of sight (the ice cream in a closed freezer). Such a focus is *settled* by
the task's words (``info["settled_actions"]``, ``sciworld_actions.settled_by_task``), so ``twx_react`` plays it
without its confirm module, as it does a move to the task's one destination once the focuses are made; a move to
one of two destinations (use-thermometer's boxes, by temperature) is confirmed, and the latest thermometer reading of
the task's thing is the observation's ``info["reading"]``, which the confirm module is shown. A move to the
destination ranks low until the focuses are made, and putting a held thing down where the task names nothing ranks
low. The ranking lives in ``benchmarks/sciworld_actions.py``.
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
from nlgrad.benchmarks.sciworld_actions import MAX_ACTIONS, is_reading, select_actions, settled_by_task
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
_ROOM = re.compile(r"called the ([^.]+)\.")
_NEVER = ("reset task", "reset")  # would wipe the task's progress and focus
_AMBIGUOUS = "Ambiguous request"

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
        self.seen: dict[str, str] = {}  # room -> what was there when last seen, in the order first visited
        self.focused = 0
        self.verbs: list[str] = []  # the simulator's action verbs, known once a task is loaded
        self._last: Observation | None = None

    def _observation(self, message: str, infos: dict[str, Any], reading: bool = False) -> Observation:
        """``reading``: the message is a measurement of a thing the task names (shown when the agent chooses)."""
        look = infos.get("look", "").strip()
        inventory = infos.get("inv", "").strip()
        match = _ROOM.search(look)
        room = match.group(1) if match else ""
        if room:
            self.seen[room] = look
        text = message.strip()
        if look and look not in text:  # "You move to the outside." says nothing about what is there
            text = f"{text}\n\n{look}" if text else look
        if inventory and "nothing" not in inventory.splitlines()[-1]:
            text += f"\n\n{inventory}"
        actions = select_actions(list(infos.get("valid", [])), self.task_description, room, list(self.seen), look,
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
        self._last = self._observation(message, infos, is_reading(action, message, self.task_description))
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
