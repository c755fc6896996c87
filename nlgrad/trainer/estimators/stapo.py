"""STAPO: outlier steps by normalized entropy get a trajectory-aware reward minus a trajectory-independent penalty
(``advantages_entropy``)."""

from __future__ import annotations


from nlgrad.trainer.advantages_entropy import stapo_advantages
from nlgrad.trainer.estimators.base import BatchEstimator, EstimatorOption, StepAdvantages, StepContext, scores

STAPO_Z = EstimatorOption("stapo_z", float, 1.0, "STAPO: entropy |z| in the anchor group above which a turn is an "
                          "outlier.", ge=0.0)
STAPO_SCALE = EstimatorOption("stapo_scale", float, 0.5, "STAPO: an outlier's trajectory-aware reward (factor on its "
                              "episode's GRPO advantage).", ge=0.0)
STAPO_PENALTY = EstimatorOption("stapo_penalty", float, 0.5, "STAPO: trajectory-independent penalty of every outlier "
                                "turn.", ge=0.0)


class STAPO(BatchEstimator):
    name = "stapo"
    summary = "STAPO: entropy-outlier steps get a trajectory-aware reward minus a fixed penalty."
    options = (STAPO_Z, STAPO_SCALE, STAPO_PENALTY)

    def advantages(self, groups, context: StepContext) -> StepAdvantages:
        config, per_group, outliers = context.config, [], 0
        for group in groups:
            per_turn, count = stapo_advantages(scores(group), [[t.anchor for t in ep.turns] for ep in group],
                                               [[t.entropy for t in ep.turns] for ep in group],
                                               z_threshold=config.stapo_z, reward_coef=config.stapo_scale,
                                               penalty=config.stapo_penalty, normalize=context.normalize)
            per_group.append(per_turn)
            outliers += count
        return StepAdvantages(per_group, {"entropy_outliers": outliers} if groups else {})


STAPO_ESTIMATOR = STAPO()
