"""The comparison harness end to end on a toy benchmark with a fake LM world (no real model)."""

import json

import pytest

from nlgrad.compare.harness import CompareConfig, Harness
from nlgrad.compare.results import SeedRecord, count_rollouts


def cfg(**kw):
    base = dict(benchmark="shout", methods=["none", "human", "nlpg", "gepa"], budget_rollouts=16, seeds=2,
                test_n=5, val=4, batch=3)
    base.update(kw)
    return CompareConfig(**base)


def test_compare_runs_every_method_and_writes_outputs(settings, fake_world, shout, tmp_path):
    out = tmp_path / "cmp"
    results = Harness(cfg(), settings, out).run()
    rows = {r["method"]: r for r in results.rows}
    assert rows["none"]["mean"] == 0.0 and rows["human"]["mean"] == 1.0
    assert rows["nlpg"]["mean"] == 1.0 and rows["gepa"]["mean"] == 1.0
    assert results.reference == "human"  # strongest baseline (ties broken by the order given)
    assert rows["nlpg"]["diff"] == 0.0 and rows["none"]["diff"] == -1.0
    assert rows["none"]["rollouts"] == 0 and rows["human"]["rollouts"] == 0
    for method in ("nlpg", "gepa"):
        for seed in (0, 1):
            record = SeedRecord.load(out / method / f"seed{seed}")
            assert record.ok and record.rollouts == count_rollouts(out / method / f"seed{seed}" / "run")
            assert 0 < record.rollouts and record.tokens >= record.tokens_spent and record.tokens > 0
            assert record.curve and record.curve[-1][1] == 1.0
            assert "UPPERCASE" in record.policy["shout.say"]
    for name in ("results.json", "table.md", "curves.png", "test_scores.png", "report.html", "compare.json"):
        assert (out / name).exists(), name
    table = (out / "table.md").read_text()
    assert "| nlpg |" in table and "human (reference)" in table
    saved = json.loads((out / "results.json").read_text())
    assert saved["reference"] == "human" and len(saved["test_task_ids"]) == 5


def test_rerun_skips_finished_pairs_and_adds_new_methods(settings, fake_world, shout, tmp_path):
    out = tmp_path / "cmp"
    first = Harness(cfg(methods=["none", "nlpg"], seeds=1), settings, out).run()
    calls = len(fake_world)
    again = Harness(cfg(methods=["none", "nlpg"], seeds=1), settings, out).run()
    assert len(fake_world) == calls  # nothing re-run, nothing re-asked
    assert [r.model_dump() for r in again.records] == [r.model_dump() for r in first.records]
    grown = Harness(cfg(methods=["textgrad"], seeds=1), settings, out).run()
    assert [r["method"] for r in grown.rows] == ["textgrad"] and grown.rows[0]["mean"] == 1.0
    assert json.loads((out / "compare.json").read_text())["methods"] == ["none", "nlpg", "textgrad"]


def test_interrupted_run_resumes_with_the_same_counts(settings, fake_world, shout, tmp_path, monkeypatch):
    import nlgrad.compare.harness as harness

    reference = Harness(cfg(methods=["nlpg"], seeds=1), settings, tmp_path / "a").run().records[0]
    real = harness.executor_for

    def crashing_test_executor(*a, **kw):  # only the harness's own test evaluation (not the optimize run's)
        executor = real(*a, **kw)

        def run(*_a, **_kw):
            raise KeyboardInterrupt("killed during the test evaluation")

        executor.run = run
        return executor

    monkeypatch.setattr(harness, "executor_for", crashing_test_executor)
    with pytest.raises(KeyboardInterrupt):
        Harness(cfg(methods=["nlpg"], seeds=1), settings, tmp_path / "b").run()
    assert SeedRecord.load(tmp_path / "b/nlpg/seed0") is None
    assert (tmp_path / "b/nlpg/seed0/run/state.json").exists()  # the optimize run itself finished
    monkeypatch.setattr(harness, "executor_for", real)
    resumed = Harness(cfg(methods=["nlpg"], seeds=1), settings, tmp_path / "b").run().records[0]
    assert resumed.test == reference.test and resumed.rollouts == reference.rollouts
    assert resumed.tokens == reference.tokens  # gross tokens: the same whether or not the cache served the calls
    assert resumed.tokens_spent == 0 < reference.tokens_spent  # run b was served entirely by run a's cache


def test_methods_that_cannot_run_become_rows_that_say_why(settings, fake_world, shout, tmp_path, monkeypatch):
    import nlgrad.compare.harness as harness
    from compare_helpers import ShoutBenchmark

    plain = ShoutBenchmark()  # no human_policy attribute
    monkeypatch.setattr(harness, "load_benchmark", lambda bid, **kw: plain)
    out = tmp_path / "cmp"
    ext = out / "train:grpo" / "seed0"  # a trainer row's result placed from a run elsewhere (e.g. a GPU)
    ext.mkdir(parents=True)
    ids = [t.id for t in plain.tasks("test", 5)]
    (ext / "external.json").write_text(json.dumps({"test": {t: 1.0 for t in ids}, "rollouts": 40, "tokens": 9,
                                                   "policy": "(LoRA weights)", "curve": [[0, 0.1], [40, 0.9]]}))
    results = Harness(cfg(methods=["none", "human", "nosuch", "train:grpo", "train:gigpo"], seeds=1), settings,
                      out).run()
    rows = {r["method"]: r for r in results.rows}
    assert rows["human"]["status"] == "unavailable" and "human-written policy" in rows["human"]["reason"]
    assert rows["nosuch"]["status"] == "unavailable" and "unknown method" in rows["nosuch"]["reason"]
    assert rows["train:grpo"]["mean"] == 1.0 and rows["train:grpo"]["rollouts"] == 40
    assert rows["train:grpo"]["diff"] == 1.0 and rows["train:grpo"]["kind"] == "method"
    # trained here only with the model it trains (tests/trainer/test_compare_row.py runs one)
    assert rows["train:gigpo"]["status"] == "unavailable" and "train:gigpo.model=PATH" in rows["train:gigpo"]["reason"]
    assert "| human | n/a |" in (out / "table.md").read_text()


def test_a_crashing_method_is_recorded_and_the_rest_goes_on(settings, fake_world, shout, tmp_path, monkeypatch):
    import nlgrad.methods.nlpg as nlpg

    def boom(self, ws, memory, iteration):
        raise RuntimeError("optimizer exploded")

    monkeypatch.setattr(nlpg.NLPG, "propose", boom)
    out = tmp_path / "cmp"
    results = Harness(cfg(methods=["nlpg", "none"], seeds=1), settings, out).run()
    rows = {r["method"]: r for r in results.rows}
    assert rows["nlpg"]["status"] == "failed" and "optimizer exploded" in rows["nlpg"]["reason"]
    assert "RuntimeError" in (out / "nlpg/seed0/error.txt").read_text()
    assert rows["none"]["mean"] == 0.0


def test_only_seeds_runs_the_chosen_seeds_and_keeps_the_declared_count(settings, fake_world, shout, tmp_path):
    from nlgrad.errors import ConfigError

    out = tmp_path / "cmp"
    results = Harness(cfg(methods=["none", "nlpg"], seeds=2), settings, out, only_seeds=[1]).run()
    assert sorted((r.method, r.seed) for r in results.records) == [("nlpg", 1), ("none", 1)]
    assert not (out / "nlpg" / "seed0").exists() and SeedRecord.load(out / "nlpg" / "seed1").ok
    assert json.loads((out / "compare.json").read_text())["seeds"] == 2
    calls = len(fake_world)
    both = Harness(cfg(methods=["none", "nlpg"], seeds=2), settings, out).run()  # seed 1 is kept, seed 0 runs
    assert sorted((r.method, r.seed) for r in both.records) == [("nlpg", 0), ("nlpg", 1), ("none", 0), ("none", 1)]
    assert len(fake_world) > calls
    with pytest.raises(ConfigError, match=r"outside 0\.\.1") as info:
        Harness(cfg(seeds=2), settings, out, only_seeds=[2])
    assert info.value.field == "--only-seeds"


def test_fixed_runs_the_named_policy_file_as_is(settings, fake_world, shout, tmp_path):
    probe = tmp_path / "probe.yaml"
    probe.write_text("schema_version: 1\nprogram: shout\nroutes:\n  shout.say:\n    - text: \"Reply in UPPERCASE.\"\n")
    out = tmp_path / "cmp"
    results = Harness(cfg(methods=["none", "fixed"], seeds=1, method_options={"fixed": {"policy": str(probe)}}),
                      settings, out).run()
    rows = {r["method"]: r for r in results.rows}
    assert rows["fixed"]["mean"] == 1.0 and rows["none"]["mean"] == 0.0 and rows["fixed"]["rollouts"] == 0
    assert SeedRecord.load(out / "fixed" / "seed0").policy["shout.say"].endswith("Reply in UPPERCASE.")
    missing = Harness(cfg(methods=["fixed"], seeds=1, method_options={"fixed": {"policy": str(tmp_path / "no.yaml")}}),
                      settings, tmp_path / "cmp2").run()
    assert missing.rows[0]["status"] == "unavailable" and "no.yaml" in missing.rows[0]["reason"]
    unnamed = Harness(cfg(methods=["fixed"], seeds=1), settings, tmp_path / "cmp3").run()
    assert unnamed.rows[0]["status"] == "unavailable" and "fixed.policy=PATH" in unnamed.rows[0]["reason"]


def test_different_settings_in_the_same_folder_are_refused(settings, fake_world, shout, tmp_path):
    from nlgrad.errors import ConfigError

    Harness(cfg(methods=["none"], seeds=1), settings, tmp_path / "cmp").run()
    with pytest.raises(ConfigError, match="different settings"):
        Harness(cfg(methods=["none"], seeds=1, budget_rollouts=99), settings, tmp_path / "cmp").run()


def test_cli_compare_prints_the_table(settings, fake_world, shout, tmp_path):
    from typer.testing import CliRunner

    from nlgrad.cli import app

    result = CliRunner().invoke(app, [
        "compare", "--benchmark", "shout", "--methods", "none,human,gepa", "--budget-rollouts", "12", "--seeds", "1",
        "--test-n", "3", "--val", "3", "--batch", "2", "--out", str(tmp_path / "cmp"), "--lm", "openai/test-model",
        "--critic-lm", "openai/test-model", "--cache-dir", str(tmp_path / "cache"),
        "--method-option", "gepa.reflection_minibatch_size=2"])
    assert result.exit_code == 0, result.output
    assert "(refere" in result.output and "gepa" in result.output and "cmp/report.html" in result.output
    saved = json.loads((tmp_path / "cmp/compare.json").read_text())
    assert saved["method_options"] == {"gepa": {"reflection_minibatch_size": 2}}
    bad = CliRunner().invoke(app, ["compare", "--benchmark", "shout", "--budget-rollouts", "0", "--out",
                                   str(tmp_path / "x"), "--lm", "openai/test-model"])
    assert bad.exit_code == 2 and "budget-rollouts" in bad.output
    bad_seeds = CliRunner().invoke(app, ["compare", "--benchmark", "shout", "--budget-rollouts", "4", "--only-seeds",
                                         "one", "--out", str(tmp_path / "y"), "--lm", "openai/test-model"])
    assert bad_seeds.exit_code != 0 and "--only-seeds" in bad_seeds.output and "one" in bad_seeds.output


def test_gate_settings_reach_every_optimize_run(shout):
    from nlgrad.compare.harness import optimize_config

    strict = optimize_config(cfg(gate_min_wins=3, gate_require_ci=True), "nlpg", 1, shout)
    assert (strict.gate_min_wins, strict.gate_require_ci, strict.seed) == (3, True, 1)
    default = optimize_config(cfg(), "jerp", 0, shout)
    assert (default.gate_min_wins, default.gate_require_ci) == (2, None)
    assert cfg(gate_min_wins=3).comparable() != cfg().comparable()  # a rerun may not change the gate
