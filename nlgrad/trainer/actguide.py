"""ActGuide-RL: when a whole group scores 0, re-roll it under a plan from the task's gold action sequence and train
those turns as if unguided.

A group whose G rollouts all scored 0 gives GRPO no signal. For such a group the trainer runs G more episodes of
the same task (same seed) with :meth:`LearnerLM.guided`: every model call samples from its prompt with the plan
hint appended to the last message, while the turn records the *unguided* prompt's token ids. The old, reference
and new log-probs of those turns are therefore all computed under the unguided prompt (the PPO ratio starts at 1
there), so the update teaches the unguided model what it did with help.

The guided episodes join their group (2G episodes), and the group's advantages are GRPO's over all 2G:
``A_i = (R_i - mean(R)) / (std(R) + eps)`` — guided successes are pushed up, and the unguided failures down
relative to them. A re-roll that also scores 0 everywhere leaves the group flat (zero advantages).

**Action data, only as a fallback.** The hint is plan-style guidance built from action data: the task's gold action
sequence from the environment's own solver (:mod:`nlgrad.trainer.gold_plans`: TextWorldExpress and ScienceWorld
generate it; other benchmarks use a ``plan``/``walkthrough`` in the task's gold), read for train tasks only, or the
user's ``--guide-hint``. Guidance is invoked only where the unguided policy found no reward (the minimal-intervention
fallback: a group with any nonzero score is never guided), and an all-zero group of a task without a plan is left
unguided (counted as ``unplanned_groups``): there is no generic hint.
"""

from __future__ import annotations

from nlgrad.runtime.executor import Executor
from nlgrad.trainer.env_states import StateLog
from nlgrad.trainer.gold_plans import PlanSource
from nlgrad.trainer.hf_lm import LearnerLM
from nlgrad.trainer.rollout import EpisodeRollout, run_episode


def plan_hint(plan: list[str] | None, override: str = "") -> str | None:
    """The hint text: ``override`` when given, else the plan's actions numbered, else None (no guidance)."""
    if override:
        return override
    if not plan:
        return None
    return "Reference plan (the actions of a run that solved this task): " + "; ".join(
        f"{i}. {action}" for i, action in enumerate(plan, 1))


def needs_guidance(group: list[EpisodeRollout]) -> bool:
    """True when every rollout of the group scored 0 (and none errored out of the episode)."""
    return bool(group) and all(ep.score <= 0.0 and ep.error is None for ep in group)


def guide_zero_groups(executor: Executor, lm: LearnerLM, groups: list[list[EpisodeRollout]], *,
                      plans: PlanSource | None = None, hint: str = "",
                      state_log: StateLog | None = None) -> dict[str, int]:
    """Extend every all-zero group that has a plan (or ``hint``) in place with G guided re-rolls; returns counts for
    the log. ``plans``: where a task's gold action sequence comes from (:func:`gold_plans.plan_source_for`)."""
    guided_groups = guided_successes = unplanned = 0
    for group in groups:
        if not needs_guidance(group):
            continue
        task, size = group[0].task, len(group)
        text = plan_hint(plans.plan(task) if plans is not None and not hint else None, hint)
        if text is None:
            unplanned += 1
            continue
        guided_groups += 1
        with lm.guided(text):
            rerolls = [run_episode(executor, lm, task, size + g, state_log) for g in range(size)]
        for episode in rerolls:
            episode.guided = True
            guided_successes += episode.score > 0
        group.extend(rerolls)
    return {"guided_groups": guided_groups, "guided_nonzero": guided_successes, "unplanned_groups": unplanned}
