"""CIGPO: outcome advantage plus a curriculum-weighted information-gain advantage, the gains scored by the frozen
reference model (:class:`~nlgrad.trainer.credit.InfoGainScorer`, handed in as ``context.scorer``)."""

from __future__ import annotations

from typing import Literal

from nlgrad.trainer import advantages as adv
from nlgrad.trainer.estimators.base import BatchEstimator, EstimatorOption, StepAdvantages, StepContext, scores

IG_WEIGHT_START = EstimatorOption("ig_weight_start", float, 1.0, "CIGPO: information-gain weight at the first step.",
                                  ge=0.0)
IG_WEIGHT_END = EstimatorOption("ig_weight_end", float, 0.1, "CIGPO: information-gain weight at the last step.",
                                ge=0.0)
IG_SCHEDULE = EstimatorOption("ig_schedule", Literal["linear", "cosine", "constant"], "linear",
                              "CIGPO: curriculum from start to end weight: linear, cosine or constant.")


class CIGPO(BatchEstimator):
    name = "cigpo"
    summary = "CIGPO: outcome plus curriculum-weighted information gain (QA with gold answers)."
    options = (IG_WEIGHT_START, IG_WEIGHT_END, IG_SCHEDULE)
    needs_gold_answer = True

    def advantages(self, groups, context: StepContext) -> StepAdvantages:
        if context.scorer is None:
            raise ValueError("CIGPO needs an information-gain scorer")
        config = context.config
        weight = adv.curriculum_weight(context.step, config.steps, start=config.ig_weight_start,
                                       end=config.ig_weight_end, schedule=config.ig_schedule)
        per_group = []
        for group in groups:
            for ep in group:
                ep.info_gains = context.scorer.episode_gains(ep)
            per_group.append(adv.cigpo_advantages(scores(group), [ep.info_gains for ep in group], weight=weight,
                                                  normalize=context.normalize))
        gains = [g for group in groups for ep in group for g in ep.info_gains]
        return StepAdvantages(per_group, {"ig_weight": weight if groups else None,
                                          "info_gain_mean": sum(gains) / len(gains) if gains else 0.0})


CIGPO_ESTIMATOR = CIGPO()
