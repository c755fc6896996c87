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

Observations are the game's own: ``text`` is the game's message plus the room description and the inventory (a move
only says "You move to the kitchen."); ``valid_actions`` are the package's valid action strings in the package's
order, less the two the benchmark refuses (``reset task``, ``reset``), bounded at ``MAX_VALID_ACTIONS``; ``info``
holds the task text, the message, the room description (``look``), the inventory, the raw score, how many valid
actions the package listed (``n_valid``) and the verbs the simulator parses in free text (``free_text_verbs``, from
its action templates). Nothing is ranked, hidden or settled by the task's words: which of the 100-1500 actions a
program shows, and in what order, is the program's decision (the scaffolded program's game knowledge is in
``nlgrad.programs.sciworld_knowledge``). Any other text is still played: ScienceWorld parses free text itself. An
ambiguous request is cancelled at once (the simulator would otherwise wait for an option number) and its options are
shown; ``reset task`` is refused.

Speed: nearly all of a step's time is the package enumerating valid actions, not the simulator step itself (a few
steps per second on a small CPU); loading and resetting a variation takes well under a second, the JVM's first start
a second or two.
"""

from __future__ import annotations

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
# A bound on the valid actions an observation carries, in the package's order: above the most the package lists in
# a state of these four tasks (1500 or so), so in practice every valid action is reported.
MAX_VALID_ACTIONS = 3000
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
                 max_actions: int = MAX_VALID_ACTIONS):
        self.task_name, self.simplifications, self.max_actions = task_name, simplifications, max_actions
        cls = _import_scienceworld()
        try:
            self._env = cls("", envStepLimit=step_limit)
        except Exception as exc:  # noqa: BLE001 - usually a missing Java runtime
            raise BenchmarkError(f"could not start ScienceWorld (is Java installed?): {exc}") from None
        self.task_description = ""
        self.verbs: list[str] = []  # the simulator's action verbs, known once a task is loaded
        self._last: Observation | None = None

    def _observation(self, message: str, infos: dict[str, Any]) -> Observation:
        look = infos.get("look", "").strip()
        inventory = infos.get("inv", "").strip()
        text = message.strip()
        if look and look not in text:  # "You move to the outside." says nothing about what is there
            text = f"{text}\n\n{look}" if text else look
        if inventory and "nothing" not in inventory.splitlines()[-1]:
            text += f"\n\n{inventory}"
        valid = [a for a in infos.get("valid", []) if a.lower() not in _NEVER]
        return Observation(
            text=text, valid_actions=valid[: self.max_actions],
            info={"look": look, "inventory": inventory, "state_key": f"{look}\n{inventory}",
                  "task": self.task_description, "moves": infos.get("moves", 0), "raw_score": infos.get("score", 0),
                  "message": message.strip(), "n_valid": len(infos.get("valid", [])),
                  "free_text_verbs": self.verbs},
        )

    def reset(self, task: Task) -> Observation:
        self._env.load(self.task_name, int(task.seed), self.simplifications)
        if not self.verbs:
            templates = self._env.get_possible_actions()  # 'focus on OBJ', 'move OBJ to OBJ', 'wait1', ...
            self.verbs = sorted({t.split(" ")[0] for t in templates if t[:1].isalpha()} - {"reset", "task"})
        obs, infos = self._env.reset()
        self.task_description = " ".join(infos.get("taskDesc", "").replace("Task Description:", "").split())
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
        success = bool(done) and raw >= 100
        self._last = self._observation(message, infos)
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
    default_program = "twx_scaffolded"  # the plain ReAct program, react_plain, is measured beside it
    default_step_cap = 30

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
