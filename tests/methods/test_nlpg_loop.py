"""NLPG end to end on a toy benchmark with a fake LM world: learns, gates, resumes after a crash, obeys budgets."""

import json

import pytest

from nlgrad.methods.base import OptimizeConfig
from nlgrad.runtime.split_guard import TestSplitLeak, guard_not_test
from nlgrad.methods.budget import Budget, parse_duration
from nlgrad.optimize import run_optimize
from nlgrad.policy import PolicyStore
from nlgrad.runtime.protocols import Task


def config(**kw):
    return OptimizeConfig(benchmark="shout", iterations=2, batch=4, val=4, test_n=4, **kw)


def test_learns_a_recurring_correction_and_reports_test(settings, fake_world, shout, tmp_path):
    outcome = run_optimize(config(), settings, tmp_path / "pol", progress=False)
    store = PolicyStore(tmp_path / "pol")
    assert store.versions() == [1, 2]  # v1 initial (empty), v2 accepted in iteration 1
    final = store.load(2)
    assert "UPPERCASE" in final.render("shout.say")
    assert "word number 7" not in final.render("shout.say") and "greeting" not in final.render("shout.say")
    entry = final.active_entries("shout.say")[0]
    assert entry.provenance.iteration == 1 and len(entry.provenance.trace_ids) >= 2
    first, second = outcome.state.history
    assert first.accepted and first.gate["mean_diff"] == 1.0
    assert not second.accepted  # nothing left to fix: either no candidate or a rejected one
    assert outcome.test["initial"]["score"]["mean"] == 0.0 and outcome.test["final"]["score"]["mean"] == 1.0
    assert all(t.startswith("shout/test/") for t in json.loads(
        (tmp_path / "pol/run/final/test.json").read_text())["initial"].get("task_ids", ["shout/test/x"]))
    it1 = tmp_path / "pol/run/iter-0001"
    for name in ("diagnoses.json", "feedback.json", "proposals.json", "aggregate.json", "update.json", "gate.json"):
        assert (it1 / name).exists(), name
    aggregated = json.loads((it1 / "aggregate.json").read_text())
    dropped = aggregated["dropped"]
    assert aggregated["similarity"] in ("all-MiniLM-L6-v2", "lexical") and 0 < aggregated["dedupe_threshold"] < 1
    reasons = " ".join(d["reason"] for d in dropped)
    assert "instance details" in reasons and "support 1" in reasons


def _versions(path):
    store = PolicyStore(path)
    return [store.load(v).model_dump(mode="json", exclude={"created"}) for v in store.versions()]


def test_resume_after_crash_matches_uninterrupted_run(settings, fake_world, shout, tmp_path, monkeypatch):
    run_optimize(config(), settings, tmp_path / "a", progress=False)

    import nlgrad.methods.nlpg as nlpg

    original = nlpg.NLPG.propose
    crashes = {"n": 0}

    def crashing(self, ws, memory, iteration):
        proposal = original(self, ws, memory, iteration)
        if iteration == 2 and crashes["n"] == 0:
            crashes["n"] += 1
            raise KeyboardInterrupt("simulated kill during iteration 2")
        return proposal

    monkeypatch.setattr(nlpg.NLPG, "propose", crashing)
    with pytest.raises(KeyboardInterrupt):
        run_optimize(config(), settings, tmp_path / "b", progress=False)
    state = json.loads((tmp_path / "b/run/state.json").read_text())
    assert state["completed"] == 1 and not state["finished"]
    calls_before = len(fake_world)
    outcome = run_optimize(config(), settings, tmp_path / "b", progress=False)
    assert outcome.state.completed == 2 and outcome.state.finished
    assert len(fake_world) == calls_before  # everything re-done was served from the LM cache
    assert _versions(tmp_path / "a") == _versions(tmp_path / "b")
    assert sorted(p.name for p in (tmp_path / "b").glob("v*.json")) == ["v0001.json", "v0002.json"]


def test_different_settings_refuse_to_resume(settings, fake_world, shout, tmp_path):
    from nlgrad.errors import ConfigError

    run_optimize(config(), settings, tmp_path / "p", progress=False, stop_after=1)
    with pytest.raises(ConfigError, match="different settings"):
        run_optimize(config(seed=7), settings, tmp_path / "p", progress=False)


def test_budget_stops_between_iterations(settings, fake_world, shout, tmp_path):
    outcome = run_optimize(config(), settings, tmp_path / "p", budget=Budget(calls=1), progress=False)
    assert outcome.state.completed == 1 and "call budget" in outcome.state.stop_reason
    assert outcome.state.finished and outcome.test is not None  # still ends with the test comparison


def test_duration_parsing():
    assert parse_duration("30m") == 1800 and parse_duration("90") == 90 and parse_duration("1.5h") == 5400
    from nlgrad.errors import ConfigError

    with pytest.raises(ConfigError):
        parse_duration("soon")


def test_test_split_is_refused():
    with pytest.raises(TestSplitLeak):
        guard_not_test([Task(id="x", split="test")])


def test_dry_run_estimates_without_calls(settings, fake_world, shout, tmp_path):
    estimate = run_optimize(config(), settings, tmp_path / "p", dry_run=True)
    assert estimate["total_calls"] > 0 and fake_world == [] and not (tmp_path / "p").exists()
