"""Which dev tasks the shared gate scores a candidate on: the first --val, or (``reach``) those whose prompt the
candidate changes."""

from __future__ import annotations

import json

import pytest

from fake_lm import UPPER_RULE
from nlgrad.cli_common import validated
from nlgrad.errors import ConfigError
from nlgrad.methods import CATALOG
from nlgrad.methods.base import OptimizeConfig, Proposal
from nlgrad.methods.baselines.static import NoPolicy
from nlgrad.methods.strategies.acceptance import PairedImprovementGate
from nlgrad.methods.strategies.validation import reaches
from nlgrad.optimize import run_optimize
from nlgrad.policy import AddOp, PolicyMemory, apply_update
from nlgrad.runtime.protocols import Task


def _task(i: int) -> Task:
    return Task(id=f"t/{i}", split="dev", inputs={"text": f"word number {i}"})


def test_a_conditional_entry_reaches_only_the_inputs_it_matches():
    empty = PolicyMemory(program="shout", routes={"shout.say": []})
    conditional, _ = apply_update(empty, [AddOp(route="shout.say", text=UPPER_RULE, match=["101", "103"])])
    whole, _ = apply_update(empty, [AddOp(route="shout.say", text=UPPER_RULE)])
    assert [i for i in range(100, 105) if reaches(empty, conditional, _task(i), ["shout.say"])] == [101, 103]
    assert all(reaches(empty, whole, _task(i), ["shout.say"]) for i in range(100, 105))
    assert not reaches(conditional, conditional, _task(101), ["shout.say"])


class ConditionalUpper(NoPolicy):
    """Proposes the UPPERCASE rule for three dev inputs only (dev tasks 1, 3 and 10: "word number 101" ...)."""

    name = "conditional_upper"

    def propose(self, ws, memory, iteration):
        op = AddOp(route="shout.say", text=UPPER_RULE, match=["101", "103", "110"])
        candidate, report = apply_update(memory, [op])
        return Proposal(candidate, ops=[op], report=report)


@pytest.mark.parametrize("validation, expected", [("first", ["shout/dev/0", "shout/dev/1", "shout/dev/2",
                                                              "shout/dev/3"]),
                                                   ("reach", ["shout/dev/1", "shout/dev/3", "shout/dev/10"])])
def test_the_gate_scores_the_tasks_its_selector_names(settings, fake_world, shout, tmp_path, monkeypatch,
                                                       validation, expected):
    monkeypatch.setitem(CATALOG, "conditional_upper", f"{__name__}:ConditionalUpper")
    config = OptimizeConfig(benchmark="shout", method="conditional_upper", iterations=1, batch=2, val=4, test_n=0,
                            gate_validation=validation, gate_require_ci=False)
    outcome = run_optimize(config, settings, tmp_path / "pol", progress=False,
                           gate=PairedImprovementGate(margin=0.0, require_ci=False, min_wins=2))
    gate = outcome.state.history[0].gate
    scored = [json.loads(line)["task_id"] for line in
              (tmp_path / "pol" / "run" / "iter-0001" / "val-candidate" / "results.jsonl").read_text().splitlines()]
    assert sorted(scored) == sorted(expected)
    assert (gate["validation"], gate["validation_tasks"]) == (validation, len(expected))
    # on its reach the rule wins every task; on the first four it wins 2 of 4 (tasks 1 and 3)
    assert gate["wins"] == 2 if validation == "first" else gate["wins"] == 3
    assert gate["accept"]


def test_the_default_selector_leaves_earlier_runs_resumable_and_a_bad_one_is_named():
    base = dict(benchmark="shout", iterations=1)
    assert OptimizeConfig(**base).fingerprint() == OptimizeConfig(**base, gate_validation="first").fingerprint()
    assert "gate_validation" not in OptimizeConfig(**base).resume_settings()
    assert OptimizeConfig(**base, gate_validation="reach").fingerprint() != OptimizeConfig(**base).fingerprint()
    with pytest.raises(ConfigError, match="'first' or 'reach'") as err:
        validated(OptimizeConfig, **base, gate_validation="everything")
    assert err.value.field == "--gate-validation"


class UnreachableUpper(NoPolicy):
    name = "unreachable_upper"

    def propose(self, ws, memory, iteration):
        op = AddOp(route="shout.say", text=UPPER_RULE, match=["999"])  # no dev input says "999"
        candidate, report = apply_update(memory, [op])
        return Proposal(candidate, ops=[op], report=report)


def test_a_candidate_that_reaches_no_dev_task_is_rejected_without_rollouts(settings, fake_world, shout, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setitem(CATALOG, "unreachable_upper", f"{__name__}:UnreachableUpper")
    config = OptimizeConfig(benchmark="shout", method="unreachable_upper", iterations=1, batch=2, val=4, test_n=0,
                            gate_validation="reach")
    outcome = run_optimize(config, settings, tmp_path / "pol", progress=False)
    gate = outcome.state.history[0].gate
    assert not gate["accept"] and gate["reason"] == "the candidate changes no validation task's prompt"
    assert gate["validation_tasks"] == 0 and not (tmp_path / "pol" / "run" / "iter-0001" / "val-candidate").exists()
