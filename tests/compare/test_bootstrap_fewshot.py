"""DSPy BootstrapFewShotWithRandomSearch (``bootstrap_fewshot``) on the toy benchmark with a fake LM world.

The fake agent repeats the text; it shouts (the gold answer) zero-shot only for even numbers, and, when its prompt
shows a worked example, also for the numbers ``follows`` names: so bootstrapping finds successful train rollouts,
and the examples help exactly where the test says.
"""

import json
import re

import pytest
from compare_helpers import ShoutBenchmark, ShoutProgram
from fake_lm import install_fake_lm, serve_toy

from nlgrad.compare.harness import CompareConfig, optimize_config
from nlgrad.compare.results import count_rollouts
from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.baselines.bootstrap_fewshot import plan_search
from nlgrad.optimize import run_optimize
from nlgrad.policy import EntryKind, PolicyStore, diff_markup, diff_memories


def agent(follows):
    def reply(messages):
        system, user = messages[0]["content"], messages[-1]["content"]
        k = int(re.search(r"\d+", user).group())
        if k % 2 == 0 or ("- Example:" in system and follows(k)):
            return user.upper()
        return user
    return reply


@pytest.fixture
def toy(monkeypatch):
    serve_toy(monkeypatch, ShoutBenchmark(), ShoutProgram)


def run(settings, tmp_path, *, budget=30, **kw):
    config = OptimizeConfig(method="bootstrap_fewshot", benchmark="shout", iterations=1, batch=3, val=4, test_n=0,
                            method_options={"max_rollouts": budget, "max_bootstrapped_demos": 2}, **kw)
    return run_optimize(config, settings, tmp_path / "p", progress=False)


def test_plan_search_fits_the_budget():
    assert plan_search(None, n_train=20, n_val=4) == (20, 6)
    assert plan_search(30, n_train=12, n_val=4) == (12, 2)  # 12 + (2 + 2) * 4 = 28
    assert plan_search(20, n_train=20, n_val=4) == (12, 0)  # the train pool shrinks first: 12 + 2 * 4
    assert plan_search(5, n_train=20, n_val=4) == (1, 0)  # the smallest search: may overshoot a tiny budget
    assert plan_search(10_000, n_train=20, n_val=4) == (20, 16)  # capped at DSPy's default
    for budget in range(9, 80):
        n_train, k = plan_search(budget, n_train=20, n_val=4)
        assert n_train + (k + 2) * 4 <= budget


def test_examples_learned_within_the_budget_render_and_diff(settings, toy, monkeypatch, tmp_path):
    install_fake_lm(monkeypatch, agent(lambda k: True))
    outcome = run(settings, tmp_path)
    (record,) = outcome.state.history
    assert record.accepted and record.gate["candidate_mean"] == 1.0 and record.gate["current_mean"] == 0.5
    assert record.gate["wins"] == 2 and "BootstrapFewShot" in record.gate["selected_by"]
    store = PolicyStore(tmp_path / "p")
    memory = store.load()
    assert memory.routes() == ["shout.say"]  # only known routes
    entries = memory.active_entries("shout.say")
    assert 1 <= len(entries) <= 2 and {e.kind for e in entries} == {EntryKind.example}
    for e in entries:  # a successful train rollout, with its task and rollout folder as provenance
        k = int(re.search(r"\d+", e.text).group())
        assert k % 2 == 0 and e.text == f"Input: word number {k}\nOutput: WORD NUMBER {k}"
        (trace_id,) = e.provenance.trace_ids
        assert trace_id.endswith(f"shout/train/{k}") and e.provenance.source == "bootstrap_fewshot"
        folder = tmp_path / "p/run/iter-0001" / trace_id.split("/")[0]
        assert (folder / "results.jsonl").exists()
    rendered = memory.render("shout.say")
    assert rendered.startswith("- Example:\n  Input: word number ") and "\n  Output: WORD NUMBER " in rendered
    diff = diff_markup(diff_memories(store.load(1), memory))
    assert "Example:" in diff and "\n    Output: WORD NUMBER" in diff
    # the budget: the method's own count is what the executor stored, and it is within max_rollouts
    log = json.loads((tmp_path / "p/run/iter-0001/bootstrap_fewshot.json").read_text())
    assert log["rollouts"] == count_rollouts(tmp_path / "p/run") <= 30
    assert log["candidate_programs"] == 2 and len(log["candidates"]) == 4
    assert (tmp_path / "p/run/iter-0001/bootstrap_fewshot.log").exists()


def test_tight_budget_is_respected(settings, toy, monkeypatch, tmp_path):
    install_fake_lm(monkeypatch, agent(lambda k: True))
    run(settings, tmp_path, budget=14)  # 14 - 2 * 4 = 6 train tasks, no shuffled candidate
    log = json.loads((tmp_path / "p/run/iter-0001/bootstrap_fewshot.json").read_text())
    assert len(log["train_tasks"]) == 6 and log["candidate_programs"] == 0
    assert count_rollouts(tmp_path / "p/run") <= 14


def test_a_candidate_the_gate_refuses_is_recorded_as_rejected(settings, toy, monkeypatch, tmp_path):
    install_fake_lm(monkeypatch, agent(lambda k: k == 101))  # examples fix one validation task only
    outcome = run(settings, tmp_path)
    (record,) = outcome.state.history
    assert not record.accepted and record.gate["wins"] == 1 and "fewer than the 2 required" in record.gate["reason"]
    store = PolicyStore(tmp_path / "p")
    assert store.versions() == [1]
    (rejected,) = store.rejected()
    assert rejected.ops and all(op["kind"] == "example" for op in rejected.ops)


def test_no_successful_train_rollout_keeps_the_policy(settings, toy, monkeypatch, tmp_path):
    install_fake_lm(monkeypatch, lambda messages: messages[-1]["content"])  # never right: nothing to bootstrap
    outcome = run(settings, tmp_path, budget=20)
    (record,) = outcome.state.history
    assert not record.gate and "zero-shot" in record.note
    assert PolicyStore(tmp_path / "p").versions() == [1]


def test_compare_runs_it_once_at_the_shared_budget():
    config = CompareConfig(benchmark="shout", methods=["bootstrap_fewshot"], budget_rollouts=40, val=4, batch=3)
    opt = optimize_config(config, "bootstrap_fewshot", 1, ShoutBenchmark())
    assert opt.iterations == 1 and opt.method_options == {"max_rollouts": 40} and opt.seed == 1
    from nlgrad.methods.registry import import_method_class, method_names

    assert "bootstrap_fewshot" in method_names()
    assert import_method_class("bootstrap_fewshot").name == "bootstrap_fewshot"


def test_compare_harness_row(settings, shout, monkeypatch, tmp_path):
    from nlgrad.compare.harness import Harness
    from nlgrad.compare.results import SeedRecord

    install_fake_lm(monkeypatch, agent(lambda k: True))
    config = CompareConfig(benchmark="shout", methods=["none", "bootstrap_fewshot"], budget_rollouts=30, seeds=1,
                           test_n=4, val=4, batch=3)
    results = Harness(config, settings, tmp_path / "cmp").run()
    rows = {r["method"]: r for r in results.rows}
    assert rows["none"]["mean"] == 0.5 and rows["bootstrap_fewshot"]["mean"] == 1.0
    record = SeedRecord.load(tmp_path / "cmp/bootstrap_fewshot/seed0")
    assert record.ok and record.iterations == 1 and 0 < record.rollouts <= 30
    assert record.policy["shout.say"].startswith("- Example:\n  Input: word number ")


def test_the_same_iteration_again_gives_the_same_proposal_from_disk(settings, toy, monkeypatch, tmp_path):
    from nlgrad.lm.client import LM
    from nlgrad.methods.base import Workspace
    from nlgrad.methods.baselines.bootstrap_fewshot import BootstrapFewShot
    from nlgrad.policy import PolicyMemory

    calls = install_fake_lm(monkeypatch, agent(lambda k: True))
    store = PolicyStore(tmp_path / "pol")
    store.commit(PolicyMemory(program="shout", benchmark="shout"), method="init")
    config = OptimizeConfig(benchmark="shout", batch=3, val=4, test_n=0)
    ws = Workspace(config=config, benchmark=ShoutBenchmark(), program=ShoutProgram(),
                   lm=LM(settings, sleep=lambda s: None), store=store, work_dir=tmp_path / "pol" / "run")
    method = BootstrapFewShot(max_rollouts=30, max_bootstrapped_demos=2)
    first = method.propose(ws, store.load(), 1)
    n_calls, n_rollouts = len(calls), count_rollouts(tmp_path / "pol/run")
    again = method.propose(ws, store.load(), 1)  # e.g. after a crash: rollouts are read back, nothing is re-asked
    assert [op.model_dump() for op in again.ops] == [op.model_dump() for op in first.ops]
    assert again.candidate.render("shout.say") == first.candidate.render("shout.say")
    assert len(calls) == n_calls and count_rollouts(tmp_path / "pol/run") == n_rollouts
