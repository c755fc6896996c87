"""ActGuide-RL's estimator: GRPO over each group, after the loop re-rolled every all-zero group under a plan from the
task's gold action sequence (:mod:`nlgrad.trainer.actguide`, :mod:`nlgrad.trainer.gold_plans`), so a guided group's
advantages are GRPO's over its 2G episodes."""

from nlgrad.trainer.estimators.base import Estimator, EstimatorOption, grpo_group

GUIDE_HINT = EstimatorOption("guide_hint", str, "", "ActGuide-RL: a hint of your own for the re-rolls of all-zero "
                             "groups (default: the task's gold action sequence as a plan; without one, no re-roll).")

ACTGUIDE = Estimator("actguide", "ActGuide-RL: all-zero groups re-rolled under the task's gold plan, GRPO over 2G.",
                     grpo_group, options=(GUIDE_HINT,), guides_zero_groups=True)
