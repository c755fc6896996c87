"""Reading a saved optimize run back, as the replay scripts do: program, iterations, proposals, results, traces."""

import pytest

import nlgrad.methods.run_artifacts as run_artifacts
from fake_lm import ShoutBenchmark, ShoutProgram, serve_toy
from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.nlpg.aggregate import aggregate
from nlgrad.optimize import run_optimize
from nlgrad.runtime.rundir import RunDir


def test_a_saved_nlpg_run_reads_back_and_its_aggregation_replays(settings, fake_world, monkeypatch, tmp_path):
    serve_toy(monkeypatch, ShoutBenchmark(), ShoutProgram, modules=(run_artifacts,))
    run_optimize(OptimizeConfig(benchmark="shout", iterations=1, batch=4, val=4, test_n=0), settings,
                 tmp_path / "pol", progress=False)
    saved = run_artifacts.load_saved_run(tmp_path / "pol/run")
    assert saved.config["benchmark"] == "shout" and list(saved.instructions) == ["shout.say"]
    assert "Repeat the text." in saved.instructions["shout.say"]
    [folder] = saved.iterations()
    [(same_folder, cands, records)] = list(saved.proposals())
    assert same_folder == folder
    assert {c.text for c in cands} >= {"Always write the repeated text in UPPERCASE letters."}
    assert records and all(r.route == "shout.say" for r in records)
    results = RunDir(folder / "rollouts").load_results()
    traces = run_artifacts.load_traces(folder / "rollouts")
    assert set(results) == set(traces) and len(results) == 4
    ops, _ = aggregate(cands, min_support=2, instance_specific={"7"}, instructions=saved.instructions)
    assert [op.text for op in ops] == ["Always write the repeated text in UPPERCASE letters."]
    assert run_artifacts.ops_summary(ops).startswith(f"[{len(ops[0].trace_ids)}] Always write")
    assert run_artifacts.ops_summary([]) == "-"
    assert run_artifacts.load_proposals(tmp_path) is None


def test_a_folder_that_is_not_a_run_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        run_artifacts.load_saved_run(tmp_path)
