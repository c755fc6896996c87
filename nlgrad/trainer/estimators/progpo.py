"""ProGPO: the outcome, or first-visit state coverage when no rollout of the group succeeded
(``advantages.progpo_advantages``); ``progpo_step``: novel-state visits per step (``progpo_step_advantages``)."""

from __future__ import annotations

from typing import Sequence

from nlgrad.trainer import advantages as adv
from nlgrad.trainer.estimators.base import (GAMMA, PROGPO_STEP, BatchEstimator, StepAdvantages, StepContext, scores,
                                            turn_steps)


def progpo_group(group: Sequence, context: StepContext) -> tuple[list[list[float]], str]:
    """ProGPO advantages of a group (episode level, or step level with ``progpo_step``) and the signal used."""
    config, norm = context.config, context.normalize
    successes = [ep.success for ep in group]
    if config.progpo_step:
        return adv.progpo_step_advantages(scores(group), successes, [turn_steps(ep) for ep in group],
                                          [adv.novel_state_rewards(ep.observations) for ep in group],
                                          gamma=config.gamma, normalize=norm)
    coverage = [adv.first_visit_coverage(ep.observations) for ep in group]
    episode_adv, signal = adv.progpo_advantages(scores(group), successes, coverage, norm)
    return adv.broadcast(episode_adv, [len(ep.turns) for ep in group]), signal


class ProGPO(BatchEstimator):
    name = "progpo"
    summary = "ProGPO: first-visit coverage in all-failed groups."
    options = (GAMMA, PROGPO_STEP)

    def advantages(self, groups, context: StepContext) -> StepAdvantages:
        per_group, progress_groups = [], 0
        for group in groups:
            per_turn, signal = progpo_group(group, context)
            per_group.append(per_turn)
            progress_groups += signal != "outcome"
        return StepAdvantages(per_group, {"coverage_groups": progress_groups})


PROGPO = ProGPO()
