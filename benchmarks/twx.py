"""TextWorldExpress (``textworld-express``, Apache-2.0, needs Java 17): multi-step text games, run offline.

Ids: ``twx/coin``, ``twx/twc``, ``twx/cooking``, ``twx/arithmetic``, ``twx/sorting``. Seeds come from the game's own
folds (train 0-999, dev 10000-10999, test 20000-20999); ``tasks(split, n)`` takes the first n seeds of the fold, so
splits are deterministic and disjoint.

Observations are the game's own: ``text`` is the game's message, ``valid_actions`` the game's valid actions in the
game's order (bounded at ``MAX_VALID_ACTIONS``, far above the 5-40 the games list), and ``info`` the task text, the
room description (``look``, also the state key), the inventory and the move count. Nothing is ranked, hidden or
derived from the task: how a program uses the list is the program's decision.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from nlgrad.benchmarks.episode_text import episode_outcome, last_moves
from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import Episode, MetricResult, Observation, StepResult, Task

GAME_PARAMS: dict[str, str] = {
    "coin": "numLocations=5,includeDoors=1",
    "twc": "numLocations=1,numItemsToPutAway=2",
    "cooking": "numLocations=1,numIngredients=2,numDistractorItems=2,includeDoors=0,limitInventorySize=0",
    "arithmetic": "",
    "sorting": "",
}
GAME_NAMES = {"cooking": "cookingworld"}  # our id -> TextWorldExpress's game name
FOLD_START = {"train": 0, "dev": 10000, "test": 20000}
FOLD_SIZE = 1000
MAX_VALID_ACTIONS = 200  # a bound on the valid actions an observation carries (the games list 5-40)


def _import_twx():
    try:
        from textworld_express import TextWorldExpressEnv
    except ImportError as exc:
        raise BenchmarkError(
            "benchmark twx/* needs the package textworld-express (and Java 17): pip install 'nlgrad[twx]'"
            f" ({exc})"
        ) from None
    return TextWorldExpressEnv


class TextWorldExpressEnvironment:
    """One JVM-backed game server, reused across the episodes of a worker thread."""

    def __init__(self, game: str, params: str, step_limit: int = 1000):
        self.game, self.params = game, params
        cls = _import_twx()
        try:
            self._env = cls(envStepLimit=step_limit)
        except Exception as exc:  # noqa: BLE001 - usually a missing Java runtime
            raise BenchmarkError(f"could not start TextWorldExpress (is Java 17 installed?): {exc}") from None
        self._env.load(gameName=game, gameParams=params)
        self.task_description = ""

    def _observation(self, obs: str, infos: dict[str, Any]) -> Observation:
        look = infos.get("look", "").strip()
        return Observation(
            text=obs.strip(),
            valid_actions=list(infos.get("validActions", []))[:MAX_VALID_ACTIONS],
            info={"look": look, "inventory": infos.get("inventory", "").strip(), "state_key": look,
                  "task": infos.get("taskDescription", self.task_description), "moves": infos.get("numMoves", 0)},
        )

    def reset(self, task: Task) -> Observation:
        obs, infos = self._env.reset(seed=task.seed, gameFold=task.meta.get("fold", task.split),
                                     gameName=self.game, gameParams=self.params)
        self.task_description = infos.get("taskDescription", "")
        return self._observation(obs, infos)

    def step(self, action: str) -> StepResult:
        obs, reward, done, infos = self._env.step(action)
        success = bool(infos.get("tasksuccess"))
        failure = bool(infos.get("taskfailure"))
        return StepResult(observation=self._observation(obs, infos), reward=float(reward),
                          done=bool(done or success or failure), score=max(0.0, min(1.0, float(infos.get("score", 0)))),
                          success=success, info={"failure": failure})

    def close(self) -> None:
        try:
            self._env.close()
        except Exception:  # noqa: BLE001
            pass


class TextWorldExpressBenchmark:
    kind = "interactive"
    default_program = "twx_scaffolded"  # the plain ReAct program, react_plain, is measured beside it
    default_step_cap = 50

    def __init__(self, game: str | None = "coin", params: str | None = None):
        game = game or "coin"
        if game not in GAME_PARAMS:
            raise BenchmarkError(f"unknown TextWorldExpress game {game!r}; known: {', '.join(GAME_PARAMS)}")
        self.game = game
        self.params = GAME_PARAMS[game] if params is None else params
        self.id = f"twx/{game}"

    @property
    def human_policy(self) -> Path:
        """``human_policies/twx-<game>.yaml`` when the game has advice of its own, else the shared ``twx.yaml``."""
        folder = files("nlgrad.benchmarks").joinpath("human_policies")
        own = folder.joinpath(f"twx-{self.game}.yaml")
        return Path(str(own if own.is_file() else folder.joinpath("twx.yaml")))

    def tasks(self, split: str, n: int | None = None) -> list[Task]:
        if split not in FOLD_START:
            raise BenchmarkError(f"unknown split {split!r} for {self.id}; use train, dev or test")
        count = FOLD_SIZE if n is None else min(n, FOLD_SIZE)
        start = FOLD_START[split]
        return [Task(id=f"{self.id}/{split}/{seed}", split=split, seed=seed,
                     inputs={"game": self.game}, meta={"fold": split, "params": self.params})
                for seed in range(start, start + count)]

    def make_env(self) -> TextWorldExpressEnvironment:
        return TextWorldExpressEnvironment(GAME_NAMES.get(self.game, self.game), self.params)

    def metric(self, task: Task, output: Any, episode: Episode | None = None) -> MetricResult:  # noqa: ARG002
        if episode is None:
            raise BenchmarkError(f"{self.id} is interactive: the metric needs the episode")
        last = episode.last_observation.text if episode.last_observation else ""
        task_text = episode.first_observation.info.get("task", "") if episode.first_observation else ""
        outcome = episode_outcome(episode, ended="the game", without="success", before="finishing")
        feedback = (f"Task: {task_text} Outcome: {outcome}. Final score {episode.score:.2f}. "
                    f"{last_moves(episode, last)}")
        return MetricResult(score=1.0 if episode.success else episode.score, success=episode.success,
                            feedback=feedback, details={"steps": episode.steps, "actions": episode.actions})
