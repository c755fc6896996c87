"""IAPO: the episode's GRPO advantage redistributed over its turns by routing weights from supported/failed uses
(``advantages_routing``, ``trace_uses``)."""

from nlgrad.trainer.advantages_routing import iapo_advantages
from nlgrad.trainer.estimators.base import Estimator, EstimatorOption, StepContext, scores

IAPO_COEF = EstimatorOption("iapo_coef", float, 1.0, "IAPO: weight of supported/failed uses in a turn's routing "
                            "weight.", ge=0.0)


def iapo_group(group, context: StepContext) -> list[list[float]]:
    return iapo_advantages(scores(group), [[t.uses_supported for t in ep.turns] for ep in group],
                           [[t.uses_failed for t in ep.turns] for ep in group], coef=context.config.iapo_coef,
                           normalize=context.normalize)


IAPO = Estimator("iapo", "IAPO: routing weights from supported/failed uses.", iapo_group, options=(IAPO_COEF,))
