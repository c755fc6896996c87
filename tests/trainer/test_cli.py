"""`nlgrad train`: registered with the app, clear errors, and a tiny end-to-end run that writes nlgrad compare's
external.json row (read back with compare's own reader)."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from nlgrad.cli import app

runner = CliRunner()


def test_train_is_registered_and_documented():
    result = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--method", "--benchmark", "--model", "--lora", "--device", "--group-size", "--external",
                   "--revisit-share", "--guide-hint", "--tapo-coef", "--stapo-z", "--stapo-scale", "--iapo-coef"):
        assert option in result.output


def test_clear_errors(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    result = runner.invoke(app, ["train", "-b", "twx/coin", "--model", str(tmp_path / "missing"), "--out",
                                 str(tmp_path / "o"), "--device", "cpu"])
    assert result.exit_code == 2 and "never downloads" in result.output
    result = runner.invoke(app, ["train", "-b", "twx/coin", "--model", "tiny", "--method", "ppo"])
    assert result.exit_code == 2 and "--method" in result.output
    result = runner.invoke(app, ["train", "-b", "twx/coin", "--model", "tiny", "--external", str(tmp_path / "e.json")])
    assert result.exit_code == 2 and "--test-n" in result.output
    result = runner.invoke(app, ["train", "-b", "twx/coin", "--model", "tiny", "--method", "cigpo", "--device", "cpu",
                                 "--out", str(tmp_path / "c")])
    assert result.exit_code == 2 and "gold answer" in result.output


@pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java")
def test_tiny_run_writes_a_compare_row(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("textworld_express")
    external = tmp_path / "cmp" / "gigpo" / "seed0" / "external.json"
    result = runner.invoke(app, ["train", "--method", "gigpo", "-b", "twx/coin", "--model", "tiny", "--full",
                                 "--device", "cpu", "--out", str(tmp_path / "run"), "--steps", "1",
                                 "--tasks-per-step", "1", "-G", "2", "--step-cap", "2", "--eval-n", "0",
                                 "--test-n", "1", "--external", str(external)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "eval test (n=1)" in result.output
    row = json.loads(external.read_text())
    assert list(row["test"]) == ["twx/coin/test/20000"] and row["rollouts"] == 2 and row["tokens"] > 0
    assert row["curve"][0][0] == 2 and (tmp_path / "run" / "final" / "config.json").exists()
    from nlgrad.compare.results import read_external

    record = read_external(external.parent, "gigpo", 0)
    assert record.test == row["test"] and record.rollouts == 2
