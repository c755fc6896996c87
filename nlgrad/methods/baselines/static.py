"""Static baselines: ``none`` (the program with an empty policy), ``human`` (the benchmark's human-written policy) and
``fixed`` (a policy file the user names: a probe, a hand-tuned or an earlier learned policy).

None of them learns. ``none`` never proposes anything. ``human`` proposes the file ``benchmark.human_policy`` once
(adopted without a validation gate: it is the reference, not a candidate); when the run already starts from it
(``--init-policy`` = that file, which is what ``nlgrad compare`` does) it proposes nothing and costs no rollouts.
``fixed`` does the same with ``--method-option policy=PATH``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nlgrad.errors import ConfigError
from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.baselines.common import mean, same_policy
from nlgrad.methods.estimate import RunShape
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
    reference = True  # nlgrad compare may take it as the reference row (the strongest baseline)
    one_shot = True  # nlgrad compare runs it for one iteration

    @classmethod
    def estimate_calls(cls, options: dict[str, Any], shape: RunShape) -> dict[str, float]:  # noqa: ARG003
        return {}  # proposes nothing

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:  # noqa: ARG002
        return Proposal(None, note="static baseline: no learning")


def fixed_policy_path(policy: str | Path) -> Path:
    """The ``fixed`` baseline's policy file or folder, or a ConfigError naming the option and the missing path."""
    path = Path(policy)
    if not path.exists():
        raise ConfigError("the policy for the `fixed` baseline does not exist", field="fixed.policy", value=str(path))
    return path


class _FilePolicy:
    """A policy from a file, adopted as is (``what`` names it in notes and gate decisions)."""

    what = "a policy file"
    reference = True  # nlgrad compare may take it as the reference row (the strongest baseline)
    one_shot = True  # nlgrad compare runs it for one iteration

    @classmethod
    def starting_policy(cls, options: dict[str, Any], benchmark) -> str:
        """The policy a comparison starts this baseline from (its own file: it then proposes nothing and costs no
        rollouts), or a ConfigError saying why there is none."""
        raise NotImplementedError

    @classmethod
    def estimate_calls(cls, options: dict[str, Any], shape: RunShape) -> dict[str, float]:
        """Once: the file and the starting policy on the ``val`` tasks (with ``evaluate``); no shared gate."""
        return {"agent (val: the file and the current policy)": shape.rollouts(2 * shape.val)} \
            if options["evaluate"] else {}

    def __init__(self, *, evaluate: bool = True):
        self.evaluate = evaluate  # standalone use: report its validation score next to the starting policy's

    def path(self, ws: Workspace) -> Path:
        raise NotImplementedError

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        chosen = PolicyMemory.load(self.path(ws))
        chosen = chosen.model_copy(update={"program": memory.program, "benchmark": memory.benchmark})
        if same_policy(chosen, memory, ws.program.routes):
            return Proposal(None, note=f"static baseline: already {self.what}")
        cand_mean = cur_mean = 0.0
        if self.evaluate:
            current = ws.rollouts(ws.val_tasks, memory, label=f"val-v{memory.version}", iteration=iteration,
                                  keep_traces=False)
            cand = ws.rollouts(ws.val_tasks, chosen, label=f"val-{self.name}", iteration=iteration, keep_traces=False)
            cand_mean, cur_mean = mean(cand.scores), mean(current.scores)
        decision = GateDecision.self_selected(cand_mean, cur_mean, f"static baseline: {self.what} is adopted as is",
                                              evaluated=self.evaluate)
        chosen = chosen.model_copy(update={"version": 0, "parent": memory.version or None})
        return Proposal(chosen, note=self.what, gate_decision=decision)


class HumanPolicy(_FilePolicy):
    """The benchmark's human-written policy, adopted as is."""

    name = "human"
    what = "the human-written policy"

    @classmethod
    def starting_policy(cls, options: dict[str, Any], benchmark) -> str:  # noqa: ARG003
        return str(human_policy_path(benchmark))

    def path(self, ws: Workspace) -> Path:
        return human_policy_path(ws.benchmark)


class FixedPolicy(_FilePolicy):
    """A policy file the user names (``policy``: a file or a policy folder's latest version), adopted as is: a probe
    or a hand-tuned policy next to the learners in ``nlgrad compare``."""

    name = "fixed"

    @classmethod
    def starting_policy(cls, options: dict[str, Any], benchmark) -> str:  # noqa: ARG003
        if "policy" not in options:
            raise ConfigError("the `fixed` baseline needs the policy it adopts", field="--method-option",
                              value="fixed.policy=PATH")
        return str(fixed_policy_path(options["policy"]))

    def __init__(self, *, policy: str, evaluate: bool = True):
        super().__init__(evaluate=evaluate)
        self.policy = str(policy)
        self.what = f"the policy {self.policy}"

    def path(self, ws: Workspace) -> Path:  # noqa: ARG002
        return fixed_policy_path(self.policy)
