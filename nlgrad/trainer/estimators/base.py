"""What an advantage estimator is: its options, what it gets for one step, and what it returns (no torch).

An estimator is one training method's credit assignment (``--method NAME``). It declares the options it reads
(:class:`EstimatorOption`: name, type, default, bounds, help); :mod:`nlgrad.trainer.config` turns the options of every
registered estimator into :class:`~nlgrad.trainer.config.TrainConfig` fields and :mod:`nlgrad.trainer.cli` into
``nlgrad train`` flags. Once per step the trainer hands it the step's rollout groups (G episodes of one task each) and a
:class:`StepContext`; it returns the per-turn advantages of every group and the statistics it adds to the step's log.

Capabilities that change more than the advantages are declared, so the loop asks the estimator instead of its name:
``revisits`` (TIGPO's revisit slots), ``guides_zero_groups`` (ActGuide-RL's hinted re-rolls), ``next_observation_loss``
(TAPO's auxiliary pass), ``needs_gold_answer`` (CIGPO: refused on a benchmark without gold answers, and the reference
model is kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol, Sequence

from nlgrad.trainer import advantages as adv

if TYPE_CHECKING:  # the rollout types import torch; estimators only read their fields
    from nlgrad.trainer.advantages_tigpo import TaskHistory
    from nlgrad.trainer.rollout import EpisodeRollout

Groups = Sequence[Sequence["EpisodeRollout"]]
PerTurn = list[list[float]]


@dataclass(frozen=True)
class EstimatorOption:
    """One option an estimator reads: a :class:`TrainConfig` field and an ``nlgrad train`` flag."""

    name: str
    type: Any
    default: Any
    help: str
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    methods_only: bool = False  # a non-default value is refused with a method that does not declare it

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def bounds(self) -> dict[str, float]:
        return {k: v for k, v in (("ge", self.ge), ("le", self.le), ("gt", self.gt)) if v is not None}


@dataclass
class StepContext:
    """What a step's estimator may use besides the rollouts: the configuration (its option values), the step, the
    normalization in effect, CIGPO's information-gain scorer, TIGPO's history and this step's revisited tasks."""

    config: Any  # TrainConfig
    step: int
    normalize: Literal["std", "mean"]
    scorer: Any = None  # InfoGainScorer (CIGPO)
    task_history: "TaskHistory | None" = None
    revisit_ids: frozenset[str] = frozenset()


@dataclass
class StepAdvantages:
    """Per group, per episode, per turn advantages, and the statistics for the step's log."""

    per_group: list[PerTurn]
    stats: dict[str, Any] = field(default_factory=dict)


class AdvantageEstimator(Protocol):
    name: str
    summary: str  # one line: what it does (the --method help)
    options: tuple[EstimatorOption, ...]
    default_normalize: Literal["std", "mean"]
    revisits: bool
    guides_zero_groups: bool
    next_observation_loss: bool
    needs_gold_answer: bool

    def advantages(self, groups: Groups, context: StepContext) -> StepAdvantages: ...


@dataclass(frozen=True)
class Estimator:
    """The usual shape: a function of one group (and the context), applied group by group; plus capabilities."""

    name: str
    summary: str
    group_advantages: Callable[[Sequence["EpisodeRollout"], StepContext], PerTurn]
    options: tuple[EstimatorOption, ...] = ()
    default_normalize: Literal["std", "mean"] = "std"
    revisits: bool = False
    guides_zero_groups: bool = False
    next_observation_loss: bool = False
    needs_gold_answer: bool = False

    def advantages(self, groups: Groups, context: StepContext) -> StepAdvantages:
        return StepAdvantages([self.group_advantages(group, context) for group in groups])


class BatchEstimator:
    """Base of the estimators that look at the whole step (batch-level rates, statistics for the log): subclasses set
    the class attributes and implement :meth:`advantages`."""

    name: str = ""
    summary: str = ""
    options: tuple[EstimatorOption, ...] = ()
    default_normalize: Literal["std", "mean"] = "std"
    revisits = guides_zero_groups = next_observation_loss = needs_gold_answer = False

    def advantages(self, groups: Groups, context: StepContext) -> StepAdvantages:
        raise NotImplementedError


# ---- options and episode signals shared by several estimators ------------------------------------------------------
GAMMA = EstimatorOption("gamma", float, 0.95, "Discount of step returns, per environment step.", ge=0.0, le=1.0)
OMEGA = EstimatorOption("omega", float, 1.0, "GiGPO, TIGPO: weight of the step advantage.", ge=0.0)
PROGPO_STEP = EstimatorOption("progpo_step", bool, False, "ProGPO's step level (novel-state visits per step); with "
                              "gigpo, as step rewards of all-failed groups.", methods_only=True)


def scores(group: Sequence["EpisodeRollout"]) -> list[float]:
    return [ep.score for ep in group]


def turn_counts(group: Sequence["EpisodeRollout"]) -> list[int]:
    return [len(ep.turns) for ep in group]


def turn_steps(episode: "EpisodeRollout") -> list[int]:
    """The environment step every turn of the episode acted at."""
    return [t.env_step for t in episode.turns]


def outcome_step_rewards(episode: "EpisodeRollout", *, novelty: bool = False) -> list[float]:
    """Rewards by environment step: the outcome on the last step, plus (``novelty``: the ProGPO step-level
    combination) 1.0 for every step that reached a state the episode had not visited."""
    rewards = adv.outcome_step_rewards(episode.horizon, episode.score)
    if novelty:
        for k, bonus in enumerate(adv.novel_state_rewards(episode.observations)):
            rewards[k] += bonus
    return rewards


def grpo_group(group: Sequence["EpisodeRollout"], context: StepContext) -> PerTurn:
    """GRPO's group-normalized episode return on every turn."""
    return adv.broadcast(adv.grpo_advantages(scores(group), context.normalize), turn_counts(group))
