"""HiDiffTIR: GRPO scaled by the group's difficulty and by the failure rate of each turn's route in the step's batch
(``advantages_difficulty``)."""

from __future__ import annotations


from nlgrad.trainer.advantages_difficulty import hidifftir_advantages, route_failure_rates
from nlgrad.trainer.estimators.base import BatchEstimator, EstimatorOption, StepAdvantages, StepContext, scores

DIFFICULTY_WEIGHT = EstimatorOption("difficulty_weight", float, 1.0, "HiDiffTIR: group difficulty scale "
                                    "(1 + w * (1 - mean score)).", ge=0.0)
ROUTE_FAILURE_WEIGHT = EstimatorOption("route_failure_weight", float, 1.0, "HiDiffTIR: route scale (1 + w * the "
                                       "route's failure rate in the batch).", ge=0.0)


class HiDiffTIR(BatchEstimator):
    name = "hidifftir"
    summary = "HiDiffTIR: GRPO scaled by group difficulty and route failure rate."
    options = (DIFFICULTY_WEIGHT, ROUTE_FAILURE_WEIGHT)

    def advantages(self, groups, context: StepContext) -> StepAdvantages:
        config = context.config
        rates = route_failure_rates((t.route, ep.success) for group in groups for ep in group for t in ep.turns)
        per_group = [hidifftir_advantages(scores(group), [[t.route for t in ep.turns] for ep in group], rates,
                                          difficulty_weight=config.difficulty_weight,
                                          route_weight=config.route_failure_weight, normalize=context.normalize)
                     for group in groups]
        return StepAdvantages(per_group, {"route_failure_rates": {route: round(rate, 4)
                                                                  for route, rate in sorted(rates.items())}})


HIDIFFTIR = HiDiffTIR()
