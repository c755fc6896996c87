"""ActGuide-RL's estimator: GRPO over each group, after the loop re-rolled every all-zero group under a plan hint
(:mod:`nlgrad.trainer.actguide`), so a guided group's advantages are GRPO's over its 2G episodes."""

from nlgrad.trainer.estimators.base import Estimator, EstimatorOption, grpo_group

GUIDE_HINT = EstimatorOption("guide_hint", str, "", "ActGuide-RL: plan hint of the re-rolls of all-zero groups "
                             "(default: the task's plan, else a generic plan).")

ACTGUIDE = Estimator("actguide", "ActGuide-RL: all-zero groups re-rolled under a plan hint, GRPO over 2G.",
                     grpo_group, options=(GUIDE_HINT,), guides_zero_groups=True)
