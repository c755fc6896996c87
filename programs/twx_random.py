"""The random floor of TextWorldExpress and ScienceWorld: each step a uniformly random choice among all the valid
actions the environment reports (sorted first, so the choice depends only on the task's seed and the set of
actions), no LM."""

from __future__ import annotations

import random
from typing import Any

from nlgrad.errors import StepCapReached
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.protocols import Task


class RandomActionProgram:
    name = "twx_random"

    def __init__(self, benchmark=None):
        self.benchmark = benchmark

    @property
    def routes(self) -> list[str]:
        return []

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        rng = random.Random(task.seed)
        prev = ctx.env_reset()
        obs = prev.value
        while ctx.episode is not None and not ctx.episode.done and obs.valid_actions:
            action = rng.choice(sorted(obs.valid_actions))
            try:
                prev = ctx.env_step(action, after=[prev])
            except StepCapReached:
                break
            obs = prev.value.observation
        return {"actions": ctx.episode.actions if ctx.episode else []}
