"""GiGPO: episode advantage plus ``omega`` x the step advantage within anchor-state groups
(``advantages.gigpo_advantages``); with ``progpo_step``, an all-failed group's step rewards add novel-state visits."""

from __future__ import annotations

from typing import Sequence

from nlgrad.trainer import advantages as adv
from nlgrad.trainer.estimators.base import (GAMMA, OMEGA, PROGPO_STEP, BatchEstimator, StepAdvantages, StepContext,
                                            outcome_step_rewards, scores, turn_steps)


def gigpo_group(group: Sequence, context: StepContext) -> tuple[list[list[float]], bool]:
    """GiGPO advantages of a group, and whether the novelty signal was used (``progpo_step`` and no success)."""
    config = context.config
    novelty = config.progpo_step and not any(ep.success for ep in group)
    step_returns = [adv.env_step_returns(turn_steps(ep), outcome_step_rewards(ep, novelty=novelty), config.gamma)
                    for ep in group]
    per_turn = adv.gigpo_advantages(scores(group), [[t.anchor for t in ep.turns] for ep in group], step_returns,
                                    omega=config.omega, normalize=context.normalize)
    return per_turn, novelty


class GiGPO(BatchEstimator):
    name = "gigpo"
    summary = "GiGPO: episode plus anchor-state step advantages."
    options = (OMEGA, GAMMA, PROGPO_STEP)
    default_normalize = "mean"

    def advantages(self, groups, context: StepContext) -> StepAdvantages:
        per_group, novelty_groups = [], 0
        for group in groups:
            per_turn, novelty = gigpo_group(group, context)
            per_group.append(per_turn)
            novelty_groups += novelty
        stats = {"coverage_groups": novelty_groups} if context.config.progpo_step else {}
        return StepAdvantages(per_group, stats)


GIGPO = GiGPO()
