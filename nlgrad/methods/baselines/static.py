"""Static baselines: ``none`` (the program with an empty policy) and ``human`` (the benchmark's human-written policy).

Neither learns. ``none`` never proposes anything. ``human`` proposes the file ``benchmark.human_policy`` once
(adopted without a validation gate: it is the reference, not a candidate); when the run already starts from it
(``--init-policy`` = that file, which is what ``nlgrad compare`` does) it proposes nothing and costs no rollouts.
"""

from __future__ import annotations

from pathlib import Path

from nlgrad.errors import ConfigError
from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.baselines.common import mean, same_policy
from nlgrad.methods.strategies.acceptance import GateDecision
from nlgrad.policy import PolicyMemory


def human_policy_path(benchmark) -> Path:
    """The benchmark's human-written policy file, or a ConfigError saying that it has none."""
    path = getattr(benchmark, "human_policy", None)
    if path is None:
        raise ConfigError("this benchmark ships no human-written policy (no `human_policy` attribute), so the "
                          "`human` baseline cannot run on it", field="--benchmark", value=getattr(benchmark, "id", "?"))
    path = Path(path)
    if not path.is_file():
        raise ConfigError("the benchmark's human-written policy file is missing", field="human_policy",
                          value=str(path))
    return path


class NoPolicy:
    """The frozen program as shipped: an empty policy in every route."""

    name = "none"

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:  # noqa: ARG002
        return Proposal(None, note="static baseline: no learning")


class HumanPolicy:
    """The benchmark's human-written policy, adopted as is."""

    name = "human"

    def __init__(self, *, evaluate: bool = True):
        self.evaluate = evaluate  # standalone use: report its validation score next to the starting policy's

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        human = PolicyMemory.load(human_policy_path(ws.benchmark))
        human = human.model_copy(update={"program": memory.program, "benchmark": memory.benchmark})
        if same_policy(human, memory, ws.program.routes):
            return Proposal(None, note="static baseline: already the human-written policy")
        cand_mean = cur_mean = 0.0
        if self.evaluate:
            current = ws.rollouts(ws.val_tasks, memory, label=f"val-v{memory.version}", iteration=iteration,
                                  keep_traces=False)
            cand = ws.rollouts(ws.val_tasks, human, label="val-human", iteration=iteration, keep_traces=False)
            cand_mean, cur_mean = mean(cand.scores), mean(current.scores)
        decision = GateDecision.self_selected(cand_mean, cur_mean,
                                              "static baseline: the human-written policy is adopted as is",
                                              evaluated=self.evaluate)
        human = human.model_copy(update={"version": 0, "parent": memory.version or None})
        return Proposal(human, note="human-written policy", gate_decision=decision)
