"""TIGPO: step credit from the task's persistent transition graph, a revisit group paired with its earlier
exploration group (``advantages_tigpo``); the loop gives revisit slots to tasks explored before."""

from nlgrad.trainer.advantages_tigpo import TaskHistory, tigpo_advantages
from nlgrad.trainer.estimators.base import (GAMMA, OMEGA, Estimator, EstimatorOption, StepContext,
                                            outcome_step_rewards, scores, turn_steps)

REVISIT_SHARE = EstimatorOption("revisit_share", float, 0.25, "TIGPO: share of a step's task slots that revisit "
                                "earlier tasks.", ge=0.0, le=1.0)


def tigpo_group(group, context: StepContext) -> list[list[float]]:
    config = context.config
    if context.task_history is None:
        context.task_history = TaskHistory()
    task_id = group[0].task.id
    return tigpo_advantages(task_id, context.task_history, scores(group), [ep.observations for ep in group],
                            [outcome_step_rewards(ep) for ep in group], [turn_steps(ep) for ep in group],
                            revisit=task_id in context.revisit_ids, step=context.step, omega=config.omega,
                            gamma=config.gamma, normalize=context.normalize)


TIGPO = Estimator("tigpo", "TIGPO: persistent transition graphs, revisits paired with exploration groups.",
                  tigpo_group, options=(OMEGA, GAMMA, REVISIT_SHARE), default_normalize="mean", revisits=True)
