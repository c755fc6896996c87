"""MileGPO: GRPO plus the discounted return of reliability- and progress-calibrated milestone/trap rewards
(``advantages_milestones``)."""

from nlgrad.trainer.advantages_milestones import milegpo_advantages
from nlgrad.trainer.estimators.base import GAMMA, Estimator, EstimatorOption, StepContext, scores, turn_steps

MILESTONE_COEF = EstimatorOption("milestone_coef", float, 1.0, "MileGPO: weight of the milestone/trap shaping "
                                 "return.", ge=0.0)
MILESTONE_PRIOR = EstimatorOption("milestone_prior", float, 1.0, "MileGPO: reliability prior (a candidate seen by n "
                                  "episodes keeps n / (n + prior) of its value).", ge=0.0)


def milegpo_group(group, context: StepContext) -> list[list[float]]:
    config = context.config
    return milegpo_advantages(scores(group), [ep.success for ep in group], [ep.observations for ep in group],
                              [turn_steps(ep) for ep in group], coef=config.milestone_coef, gamma=config.gamma,
                              prior=config.milestone_prior, normalize=context.normalize)


MILEGPO = Estimator("milegpo", "MileGPO: calibrated milestone/trap shaping.", milegpo_group,
                    options=(GAMMA, MILESTONE_COEF, MILESTONE_PRIOR))
