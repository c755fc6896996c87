"""Action data for ActGuide-RL: a train task's gold action sequence, from the environment's own solver.

TextWorldExpress and ScienceWorld generate a gold path for a game/variation when asked (``generateGoldPath=True``), the
action sequence of a solved run. :func:`plan_source_for` picks, by benchmark, a :class:`PlanSource`:

- ``twx/*``: :class:`TextWorldExpressGoldPlans` (a TextWorldExpress server of its own, reset on the task's seed and
  fold with the gold path generated);
- ``sciworld/*``: :class:`ScienceWorldGoldPlans` (a ScienceWorld simulator of its own, the task's variation loaded
  with the benchmark's simplifications and the gold path generated);
- anything else: :class:`TaskGoldPlans` (a ``plan`` or ``walkthrough`` list in the task's gold, when it has one).

Every source reads **train tasks only** (:class:`TrainOnly` refuses any other split: a plan of a dev or test task
would leak its solution into the weights), caches plans by task id, and starts its environment only on the first
plan asked for. The benchmark's own environments are not touched: the rollouts never see a gold path.
"""

from __future__ import annotations

from typing import Any, Protocol

from nlgrad.runtime.protocols import Task

ERROR_PREFIX = "ERROR:"  # what the packages return instead of a plan when no gold path was generated


class PlanSource(Protocol):
    def plan(self, task: Task) -> list[str] | None: ...

    def close(self) -> None: ...


def clean_plan(actions: Any) -> list[str] | None:
    """The actions as a list of strings; None when there are none or the package reported an error."""
    if not actions:
        return None
    steps = [str(a).strip() for a in actions if str(a).strip()]
    if not steps or any(s.startswith(ERROR_PREFIX) for s in steps):
        return None
    return steps


def close_quietly(env: Any) -> None:
    """Close a package environment once: its ``__del__`` closes again, which fails on the dead pipe."""
    if env is None:
        return
    try:
        env.close()
    except Exception:  # noqa: BLE001 - the JVM may be gone already
        pass
    env.close = lambda: None


class TaskGoldPlans:
    """A plan carried by the task itself: its gold's ``plan`` or ``walkthrough`` (a list, or one string)."""

    def plan(self, task: Task) -> list[str] | None:
        gold = task.gold
        if not isinstance(gold, dict):
            return None
        plan = gold.get("plan") or gold.get("walkthrough")
        return clean_plan(plan if isinstance(plan, (list, tuple)) else [plan] if plan else None)

    def close(self) -> None:
        pass


class TextWorldExpressGoldPlans:
    """TextWorldExpress's gold action sequence of a task (``benchmark``: a ``twx/*`` benchmark)."""

    def __init__(self, benchmark: Any):
        from nlgrad.benchmarks.twx import GAME_NAMES

        self.game = GAME_NAMES.get(benchmark.game, benchmark.game)
        self.params = benchmark.params
        self._env: Any = None

    def plan(self, task: Task) -> list[str] | None:
        if self._env is None:
            from nlgrad.benchmarks.twx import _import_twx

            self._env = _import_twx()(envStepLimit=1000)
        self._env.reset(seed=task.seed, gameFold=task.meta.get("fold", task.split), gameName=self.game,
                        gameParams=task.meta.get("params", self.params), generateGoldPath=True)
        return clean_plan(self._env.getGoldActionSequence())

    def close(self) -> None:
        close_quietly(self._env)
        self._env = None


class ScienceWorldGoldPlans:
    """ScienceWorld's gold action sequence of a task (``benchmark``: a ``sciworld/*`` benchmark)."""

    def __init__(self, benchmark: Any):
        self.task_name, self.simplifications = benchmark.task_name, benchmark.simplifications
        self._env: Any = None

    def plan(self, task: Task) -> list[str] | None:
        if self._env is None:
            from nlgrad.benchmarks.sciworld import _import_scienceworld

            self._env = _import_scienceworld()("", envStepLimit=100)
        variation = int(task.meta.get("variation", task.seed))
        self._env.load(self.task_name, variation, task.meta.get("simplifications", self.simplifications),
                       generateGoldPath=True)
        return clean_plan(self._env.get_gold_action_sequence())

    def close(self) -> None:
        close_quietly(self._env)
        self._env = None


class TrainOnly:
    """Wraps a source: plans of train tasks only (any other split is refused), cached by task id."""

    def __init__(self, source: PlanSource):
        self.source = source
        self.cache: dict[str, list[str] | None] = {}

    def plan(self, task: Task) -> list[str] | None:
        if task.split != "train":
            raise ValueError(f"gold plans are read for train tasks only, not {task.id} ({task.split})")
        if task.id not in self.cache:
            self.cache[task.id] = self.source.plan(task)
        return self.cache[task.id]

    def close(self) -> None:
        self.source.close()


def plan_source_for(benchmark: Any) -> TrainOnly:
    """The gold-plan source of ``benchmark`` (see the module docstring), train tasks only."""
    family = str(getattr(benchmark, "id", "")).split("/", 1)[0]
    if family == "twx":
        return TrainOnly(TextWorldExpressGoldPlans(benchmark))
    if family == "sciworld":
        return TrainOnly(ScienceWorldGoldPlans(benchmark))
    return TrainOnly(TaskGoldPlans())
