"""Smaller gaps: a budget of zero or less, a results line with a field this version does not know, two task ids
that used to share one trace file name."""

from __future__ import annotations

import json

import pytest
from reliability_helpers import write_toy_config
from typer.testing import CliRunner

from nlgrad.cli import app
from nlgrad.errors import ConfigError
from nlgrad.methods.budget import Budget
from nlgrad.runtime.rundir import RunDir
from nlgrad.runtime.trace import Trace


@pytest.mark.parametrize("kw, option", [({"calls": 0}, "--budget-calls"), ({"tokens": -5}, "--budget-tokens"),
                                        ({"usd": 0.0}, "--budget-usd"), ({"time_s": -1.0}, "--budget-time"),
                                        ({"usd": float("nan")}, "--budget-usd")])
def test_non_positive_budget_is_refused(kw, option):
    with pytest.raises(ConfigError, match="greater than zero") as info:
        Budget(**kw)
    assert f"field: {option}" in str(info.value)


@pytest.mark.parametrize("flag, value", [("--budget-calls", "0"), ("--budget-time", "0s"),
                                         ("--budget-tokens", "-1")])
def test_cli_refuses_a_non_positive_budget_before_work(toy, server, tmp_path, flag, value):
    config = write_toy_config(tmp_path / "c.toml", server.api_base, cache_dir=tmp_path / "cache",
                              runs_dir=tmp_path / "runs")
    result = CliRunner().invoke(app, ["optimize", "--benchmark", "toy", "--out", str(tmp_path / "p"), flag, value,
                                      "--iterations", "1", "--batch", "2", "--val", "2", "--test-n", "0",
                                      "--config", str(config)])
    text = "".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert flag in text and "greaterthanzero" in text
    assert server.stats.requests == 0
    assert not (tmp_path / "p" / "v0001.json").exists()


def _result(task_id, **extra):
    return {"task_id": task_id, "split": "dev", "seed": 0, "score": 1.0, "success": True, **extra}


def test_unknown_field_in_a_results_line_is_a_clear_error(tmp_path):
    run = RunDir(tmp_path / "run").create()
    run.append_result(_result("toy/dev/0"))
    run.append_result(_result("toy/dev/1", reward=0.5))
    with pytest.raises(ConfigError) as info:
        run.load_results()
    message = str(info.value)
    assert "unknown field(s) reward" in message and "results.jsonl" in message and "toy/dev/1" in message


def test_missing_field_in_a_results_line_is_a_clear_error(tmp_path):
    run = RunDir(tmp_path / "run").create()
    (run.path / "results.jsonl").write_text(json.dumps({"task_id": "t", "split": "dev"}) + "\n")
    with pytest.raises(ConfigError, match="missing field"):
        run.load_results()


def test_unknown_field_stops_an_executor_resume_with_that_error(toy, server, tmp_path):
    import reliability_world as world
    from reliability_helpers import toy_settings

    from nlgrad.lm.client import LM
    from nlgrad.runtime.executor import Executor

    run = RunDir(tmp_path / "run").create()
    run.append_result(_result("toy/dev/0", reward=0.5))
    executor = Executor(benchmark=world.ToyBenchmark(), program=world.ToyProgram(),
                        lm=LM(toy_settings(tmp_path, server.api_base)), run_dir=run, progress=False)
    with pytest.raises(ConfigError, match="unknown field"):  # not a TypeError from TaskResult(**record)
        executor.run(world.ToyBenchmark().tasks("dev", 2), resume=True)


@pytest.mark.parametrize("ids", [("a:b", "a?b"), ("a/b", "a_b"), ("x" * 200 + "1", "x" * 200 + "2"),
                                 (".hidden", "%2Ehidden")])
def test_distinct_task_ids_get_distinct_trace_files(tmp_path, ids):
    run = RunDir(tmp_path / "run").create()
    for task_id in ids:
        run.save_trace(Trace(task_id=task_id, program="p"))
    paths = [run.trace_path(t) for t in ids]
    assert paths[0] != paths[1]
    assert [Trace.load(p).task_id for p in paths] == list(ids)
    assert all(len(p.name) <= 130 and not p.name.startswith(".") for p in paths)


def test_trace_of_an_older_run_dir_is_still_found(tmp_path):
    run = RunDir(tmp_path / "run").create()
    legacy = run.path / "traces" / "toy_dev_0.json"  # how earlier versions named the trace of toy/dev/0
    Trace(task_id="toy/dev/0", program="p").save(legacy)
    assert run.trace_path("toy/dev/0") == legacy
