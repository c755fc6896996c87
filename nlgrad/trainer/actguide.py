"""ActGuide-RL: when a whole group scores 0, re-roll it with a plan hint and train those turns as if unguided.

A group whose G rollouts all scored 0 gives GRPO no signal. For such a group the trainer runs G more episodes of
the same task (same seed) with :meth:`LearnerLM.guided`: every model call samples from its prompt with the plan
hint appended to the last message, while the turn records the *unguided* prompt's token ids. The old, reference
and new log-probs of those turns are therefore all computed under the unguided prompt (the PPO ratio starts at 1
there), so the update teaches the unguided model what it did with help.

The guided episodes join their group (2G episodes), and the group's advantages are GRPO's over all 2G:
``A_i = (R_i - mean(R)) / (std(R) + eps)`` — guided successes are pushed up, and the unguided failures down
relative to them. A re-roll that also scores 0 everywhere leaves the group flat (zero advantages).

The hint (:func:`plan_hint`): ``--guide-hint`` when given; else the task's own plan when its gold carries one (a
``plan`` or ``walkthrough`` entry, a list joined with "; "); else :data:`DEFAULT_HINT`.
"""

from __future__ import annotations

from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import Task
from nlgrad.trainer.env_states import StateLog
from nlgrad.trainer.hf_lm import LearnerLM
from nlgrad.trainer.rollout import EpisodeRollout, run_episode

DEFAULT_HINT = ("Plan: work step by step toward the goal. Look at what is available, try options you have not "
                "tried yet (open doors, go to places you have not visited, look things up), and act on the goal "
                "as soon as it is within reach.")


def plan_hint(task: Task, override: str = "") -> str:
    """The hint text for ``task`` (see the module docstring)."""
    if override:
        return override
    gold = task.gold
    if isinstance(gold, dict):
        plan = gold.get("plan") or gold.get("walkthrough")
        if plan:
            return "Plan: " + ("; ".join(map(str, plan)) if isinstance(plan, (list, tuple)) else str(plan))
    return DEFAULT_HINT


def needs_guidance(group: list[EpisodeRollout]) -> bool:
    """True when every rollout of the group scored 0 (and none errored out of the episode)."""
    return bool(group) and all(ep.score <= 0.0 and ep.error is None for ep in group)


def guide_zero_groups(executor: Executor, lm: LearnerLM, groups: list[list[EpisodeRollout]], *, hint: str = "",
                      state_log: StateLog | None = None) -> dict[str, int]:
    """Extend every all-zero group in place with G guided re-rolls; returns counts for the log."""
    guided_groups = guided_successes = 0
    for group in groups:
        if not needs_guidance(group):
            continue
        guided_groups += 1
        task, size = group[0].task, len(group)
        with lm.guided(plan_hint(task, hint)):
            rerolls = [run_episode(executor, lm, task, size + g, state_log) for g in range(size)]
        for episode in rerolls:
            episode.guided = True
            guided_successes += episode.score > 0
        group.extend(rerolls)
    return {"guided_groups": guided_groups, "guided_nonzero": guided_successes}
