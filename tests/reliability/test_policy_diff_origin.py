"""`nlgrad policy diff` of two policies learned for different programs or benchmarks (a hotpotqa policy against a
twx/cooking one) says so in its header, in text and JSON, instead of printing a diff that reads like one policy's
history."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from nlgrad.cli import app
from nlgrad.policy import PolicyMemory, diff_markup, diff_memories


def _policy(path: Path, program: str, benchmark: str | None, route: str, text: str) -> Path:
    data = {"schema_version": 1, "program": program, "routes": {route: [{"text": text}]}}
    if benchmark is not None:
        data["benchmark"] = benchmark
    path.write_text(json.dumps(data))
    return path


def _diff(*args) -> str:
    result = CliRunner().invoke(app, ["policy", "diff", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output


def test_diff_of_unrelated_policies_says_program_and_benchmark_differ(tmp_path):
    hotpot = _policy(tmp_path / "hotpot.json", "hotpot_multihop", "hotpotqa", "hotpot.answer", "Answer briefly.")
    cooking = _policy(tmp_path / "cooking.json", "twx_react", "twx/cooking", "twx.act", "Read the recipe first.")
    out = _diff(hotpot, cooking)
    header = out.split("route ")[0]
    assert "different programs" in header and "'hotpot_multihop' vs 'twx_react'" in header
    assert "different benchmarks" in header and "'hotpotqa' vs 'twx/cooking'" in header
    assert out.index("different programs") < out.index("route hotpot.answer")
    data = json.loads(_diff(hotpot, cooking, "--format", "json"))
    assert data["old_program"] == "hotpot_multihop" and data["new_program"] == "twx_react"
    assert data["old_benchmark"] == "hotpotqa" and data["new_benchmark"] == "twx/cooking"
    assert len(data["mismatch"]) == 2


def test_diff_of_one_program_on_two_benchmarks_names_only_the_benchmarks(tmp_path):
    coin = _policy(tmp_path / "coin.json", "twx_react", "twx/coin", "twx.act", "Open doors.")
    cooking = _policy(tmp_path / "cooking.json", "twx_react", "twx/cooking", "twx.act", "Read the recipe first.")
    out = _diff(coin, cooking)
    assert "different benchmarks" in out and "different programs" not in out


def test_diff_of_related_policies_has_no_such_note(tmp_path):
    old = _policy(tmp_path / "a.json", "twx_react", "twx/coin", "twx.act", "Open doors.")
    new = _policy(tmp_path / "b.json", "twx_react", "twx/coin", "twx.act", "Open closed doors.")
    hand = _policy(tmp_path / "c.json", "twx_react", None, "twx.act", "Open doors.")  # no benchmark recorded
    for first, second in ((old, new), (hand, new)):
        out = _diff(first, second)
        assert "different" not in out and "mismatch" not in out
    memory = PolicyMemory.load(old)
    assert diff_memories(memory, memory).mismatch == []
    assert "different" not in diff_markup(diff_memories(memory, PolicyMemory.load(new)))
