"""TAPO's estimator: GRPO advantages; the loop adds the next-observation loss after every PPO pass
(:mod:`nlgrad.trainer.aux_next_observation`)."""

from nlgrad.trainer.estimators.base import Estimator, EstimatorOption, grpo_group

TAPO_COEF = EstimatorOption("tapo_coef", float, 0.1, "TAPO: weight of the next-observation loss.", ge=0.0)
TAPO_MAX_TOKENS = EstimatorOption("tapo_max_tokens", int, 64, "TAPO: observation tokens predicted per turn.", ge=1)

TAPO = Estimator("tapo", "TAPO: GRPO plus a next-observation prediction loss.", grpo_group,
                 options=(TAPO_COEF, TAPO_MAX_TOKENS), next_observation_loss=True)
