"""GRPO: the group-normalized episode return on every turn (``advantages.grpo_advantages``)."""

from nlgrad.trainer.estimators.base import Estimator, grpo_group

GRPO = Estimator("grpo", "GRPO: group-normalized episode return on every turn.", grpo_group)
