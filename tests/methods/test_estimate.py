"""Methods declare their own cost (``estimate_calls``) and their own settings (NLPG's ``min_support``,
``max_diagnose``, ``contrast_successes`` are its options); ``nlgrad optimize --dry-run`` reads them. Numbers are
hand-computed from each method's docstring."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import nlgrad.optimize as optimize
from nlgrad.cli import app
from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.estimate import GATE, ROLLOUTS, RunShape, iteration_calls
from nlgrad.methods.registry import method_class


def shape(**kw) -> RunShape:
    base = dict(iterations=2, batch=6, val=4, test_n=5, routes=2, calls_per_rollout=2)
    return RunShape(**{**base, **kw})


def calls(method: str, options: dict | None = None, **kw) -> dict:
    estimate, note = iteration_calls(method_class(method), options or {}, shape(**kw))
    assert note == ""
    return estimate


def test_nlpg_critic_counts_the_backward_pass_by_how_often_a_route_runs():
    # static, 2 routes, one call each: min(6, 6 + 1) = 6 traces x (1 diagnosis + 2 node-feedback calls)
    static = calls("nlpg")
    assert static == {ROLLOUTS: 12, GATE: 16, "critic": 18, "optimizer": 2}
    # an episode of 20 calls on 2 routes: 10 calls a route > loop_threshold 4, so one localization per route
    looped = calls("nlpg", calls_per_rollout=20)
    assert looped["critic"] == 6 * (1 + 2) and looped[ROLLOUTS] == 120
    # an episode of 6 calls on 2 routes: 3 calls a route <= 4, so each call gets its own feedback
    short = calls("nlpg", calls_per_rollout=6)
    assert short["critic"] == 6 * (1 + 6)
    # its own options: fewer traces diagnosed, more proposals, abstraction, no critic
    assert calls("nlpg", {"max_diagnose": 2, "contrast_successes": 0})["critic"] == 2 * 3
    assert calls("nlpg", {"proposals_per_route": 2, "abstract": True})["optimizer"] == 2 * 2 + 2
    assert calls("nlpg", {"critic": False, "tag_groups": True}) == {ROLLOUTS: 12, GATE: 16, "optimizer": 2}


def test_other_methods_declare_their_own_calls():
    assert calls("langmarl") == {ROLLOUTS: 12, GATE: 16, "critic": 6, "optimizer": 6 * 2 + 2}
    # DMRL: no shared gate; G=8 candidates and the control on 4 val tasks, 8 / 4 = 2 editor calls
    assert calls("dmrl") == {ROLLOUTS: 12, "agent (A/B: candidates and control)": 9 * 4 * 2, "optimizer": 2}
    assert calls("dmrl", {"ab_split": "train", "group_size": 4})["agent (A/B: candidates and control)"] == 4 * 6 * 2
    assert calls("jerp") == {ROLLOUTS: 12, GATE: 16, "optimizer": 3}
    assert calls("jerp", {"gate": "none", "trainer": {"model": "tiny", "group_size": 3}}) == {ROLLOUTS: 36,
                                                                                              "optimizer": 3}
    assert calls("none") == {} and calls("human") == {"agent (val: the file and the current policy)": 16}
    assert calls("gepa") == {ROLLOUTS: (6 + 8) * 2, "optimizer": 14 / 6}


def test_a_method_without_an_estimate_gets_the_loops_calls_and_says_so():
    class Quiet:
        def __init__(self, *, k: int = 1):
            self.k = k

    estimate, note = iteration_calls(Quiet, {}, shape())
    assert estimate == {ROLLOUTS: 12, GATE: 16} and "no estimate" in note


class Bench:
    id, kind, default_program, default_step_cap = "fake/static", "static", "toy", None


class Program:
    name, routes = "toy", ["toy.a", "toy.b"]


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(optimize, "load_benchmark", lambda bid, **kw: Bench())
    monkeypatch.setattr(optimize, "load_program", lambda name, benchmark=None, **kw: Program())


def test_dry_run_totals_the_methods_estimate(toy):
    config = OptimizeConfig(benchmark="x", iterations=3, batch=6, val=4, test_n=5,
                            method_options={"max_diagnose": 2, "contrast_successes": 0})
    estimate = optimize.estimate(config, Bench(), Program())
    assert estimate["calls"] == {ROLLOUTS: 36, GATE: 48, "critic": 18, "optimizer": 6,
                                 "agent (final test eval: initial + final)": 20}
    assert estimate["total_calls"] == 128 and "no estimate" not in estimate["note"]


def dry_run(*extra: str):
    return CliRunner().invoke(app, ["optimize", "--benchmark", "x", "--out", "unused", "--dry-run", "--lm",
                                    "openai/test-model", "--critic-lm", "openai/test-model", *extra])


def test_min_support_flag_is_the_methods_option(toy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = dry_run("--min-support", "3")
    assert result.exit_code == 0, result.output
    assert "'min_support': 3" in result.output
    assert "'min_support': 4" in dry_run("--method", "langmarl", "--min-support", "4").output
    refused = dry_run("--method", "dmrl", "--min-support", "3")  # DMRL has no such option
    assert refused.exit_code != 0 and "min_support" in refused.output
    assert not (tmp_path / "unused").exists()
    with pytest.raises(Exception):
        OptimizeConfig(benchmark="x", max_diagnose=3)  # NLPG's settings are its options, not the run's
