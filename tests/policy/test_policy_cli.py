from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from policy_helpers import snapshot
from nlgrad.policy import PolicyStore
from nlgrad.policy.cli import policy_app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(policy_app, [str(a) for a in args], catch_exceptions=False)


def test_help_lists_commands():
    result = run("--help")
    assert result.exit_code == 0
    for command in ("show", "log", "diff", "render", "apply"):
        assert command in result.stdout


def test_show(store: PolicyStore):
    result = run("show", store.dir)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "twx_react" in out and "version 3" in out and "parent 2" in out and "dev=0.6" in out
    assert "twx.act#1" in out and "twx.act#3" in out and "+0/-0" in out and "nlgrad" in out
    one = run("show", store.dir, "--version", "1", "--route", "twx.plan")
    assert one.exit_code == 0 and "twx.plan#1" in one.stdout and "twx.act#1" not in one.stdout
    file_result = run("show", store.version_path(2))
    assert file_result.exit_code == 0 and "version 2" in file_result.stdout


def test_log(store: PolicyStore):
    store.record_rejected([{"op": "delete", "id": "twx.act#1"}], "worse")
    result = run("log", store.dir)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    rows = [line for line in lines if line.strip().startswith(("│ 1", "│ 2", "│ 3"))]
    assert [r.split("│")[1].strip() for r in rows] == ["3", "2", "1"]
    assert "human" in result.stdout and "dev=0.5" in result.stdout and "1 rejected update" in result.stdout


def test_diff_versions_text_and_json(store: PolicyStore):
    text = run("diff", store.dir, "2", "3")
    assert text.exit_code == 0, text.output
    assert "route twx.act" in text.stdout and "~ twx.act#3" in text.stdout
    assert "[-as soon as you see it.-]" in text.stdout and "{+at once.+}" in text.stdout
    assert "- twx.plan#1" in text.stdout
    data = json.loads(run("diff", store.dir, "2", "3", "--format", "json").stdout)
    assert data["old_version"] == 2 and data["new_version"] == 3
    routes = {r["route"]: r for r in data["routes"]}
    assert routes["twx.act"]["edited"][0]["text_ops"][-1] == {"op": "insert", "text": "at once."}
    assert routes["twx.plan"]["removed"][0]["id"] == "twx.plan#1"


def test_diff_dir_single_version_compares_with_latest(store: PolicyStore):
    result = run("diff", store.dir, "2", "-f", "json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and (data["old_version"], data["new_version"]) == (2, 3)


def test_diff_two_files(store: PolicyStore):
    result = run("diff", store.version_path(1), store.version_path(2), "-f", "json")
    assert result.exit_code == 0
    added = json.loads(result.stdout)["routes"][0]["added"]
    assert [e["id"] for e in added] == ["twx.act#3"]
    same = run("diff", store.version_path(1), store.version_path(1))
    assert "no changes" in same.stdout


def test_render_formats(store: PolicyStore):
    memory = store.load()
    text = run("render", store.dir, "--route", "twx.act")
    assert text.exit_code == 0 and text.stdout == memory.render("twx.act") + "\n"
    assert run("render", store.dir, "--route", "nope").stdout == ""
    md = run("render", store.dir, "-r", "twx.act", "--format", "markdown").stdout
    assert md.startswith("### `twx.act` (policy v3)")
    data = json.loads(run("render", store.dir, "--format", "json").stdout)
    assert data["version"] == 3 and data["routes"]["twx.act"]["text"] == memory.render("twx.act")
    old = run("render", store.dir, "-r", "twx.plan", "--version", "1").stdout
    assert old == "- Write a one-line plan before the first action.\n"
    assert run("render", store.dir).stdout.startswith("[twx.act]\n")
    assert run("render", store.dir, "--format", "yaml").exit_code != 0


def test_apply_check_and_idempotence(store: PolicyStore, tmp_path: Path):
    prompt = tmp_path / "deployed.txt"
    original = b"You are a text-game agent.\r\nStay {{ calm }}.\n\n\xe2\x9c\x93 done"
    prompt.write_bytes(original)
    prompt.chmod(0o640)
    assert run("apply", store.dir, "--route", "twx.act", "--prompt-file", prompt, "--check").exit_code == 1
    assert prompt.read_bytes() == original
    result = run("apply", store.dir, "--route", "twx.act", "--prompt-file", prompt)
    assert result.exit_code == 0 and "applied policy v3" in result.stdout
    applied = prompt.read_bytes()
    assert applied.startswith(original + b"\r\n<!-- nlgrad:policy route=twx.act version=3 BEGIN -->\r\n")
    assert (prompt.stat().st_mode & 0o777) == 0o640
    assert run("apply", store.dir, "-r", "twx.act", "-p", prompt, "--check").exit_code == 0
    again = run("apply", store.dir, "-r", "twx.act", "-p", prompt)
    assert again.exit_code == 0 and "already up to date" in again.stdout and prompt.read_bytes() == applied
    # an older version replaces the block in place; --check then reports the file out of date for v3
    assert run("apply", store.dir, "-r", "twx.act", "-p", prompt, "--version", "1").exit_code == 0
    older = prompt.read_bytes()
    assert older.startswith(original) and b"version=1 BEGIN" in older and older.count(b"BEGIN") == 1
    assert run("apply", store.dir, "-r", "twx.act", "-p", prompt, "--check").exit_code == 1
    assert run("apply", store.dir, "-r", "twx.act", "-p", prompt).exit_code == 0
    assert prompt.read_bytes() == applied


def test_apply_unknown_route_warns(store: PolicyStore, tmp_path: Path):
    prompt = tmp_path / "p.txt"
    prompt.write_text("x")
    result = run("apply", store.dir, "-r", "hotpot.hop2", "-p", prompt)
    assert result.exit_code == 0 and "has no entries" in result.stderr


@pytest.mark.parametrize("args", [
    ("show", "{bad}"), ("render", "{bad}"), ("log", "{missing}"), ("diff", "{dir}", "1", "x"),
    ("diff", "{dir}", "1", "9"), ("apply", "{dir}", "-r", "twx.act", "-p", "{missing}"),
])
def test_errors_are_one_clear_line(store: PolicyStore, tmp_path: Path, args):
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nprogram: p\nroutes:\n  r:\n    - text: 5\n")
    before = snapshot(store.dir)
    argv = [a.format(bad=bad, missing=tmp_path / "missing", dir=store.dir) for a in args]
    result = run(*argv)
    assert result.exit_code == 2
    assert "error:" in result.stderr and "Traceback" not in result.output
    if args[1] == "{bad}":
        assert "routes.r.0.text" in result.stderr and str(bad) in result.stderr.replace("\n", "")
    assert snapshot(store.dir) == before


def test_show_and_render_follow_a_recorded_retrieval_selection(tmp_path: Path):
    from nlgrad.policy import PolicyMemory

    memory = PolicyMemory.model_validate({"program": "p", "selection": {"kind": "retrieval", "k": 1,
                                                                        "embedder": "lexical"},
                                          "routes": {"r": [{"text": "Answer in JSON format only."},
                                                           {"text": "Use commas between clauses."}]}})
    path = memory.save(tmp_path / "pool.json")
    shown = run("show", path)
    assert shown.exit_code == 0 and "retrieval: the top 1 entries per call by lexical" in shown.stdout
    one = run("render", path, "--route", "r", "--for-input", "reply in JSON format")
    assert one.exit_code == 0 and one.stdout.strip() == "- Answer in JSON format only."
    assert "selection" not in PolicyMemory.model_validate({"program": "p"}).to_json()  # default: no key written
