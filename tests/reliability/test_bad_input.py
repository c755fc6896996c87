"""Bad input: malformed benchmark rows, unknown names, bad CLI values, corrupt cache entries, traces, state and
policy files. Each is a clear error naming the file / field / value, a non-zero exit code, and nothing written over.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sqlite3
from pathlib import Path

import pytest
from reliability_helpers import toy_settings, write_toy_config
from typer.testing import CliRunner

from nlgrad.cli import app
from nlgrad.errors import NlgradError

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def _cli(args: list[str]):
    """Exit code and the output with all whitespace removed (Rich wraps long paths at the terminal width)."""
    result = CliRunner().invoke(app, args)
    text = result.output + (getattr(result, "stderr", "") if result.stderr_bytes is not None else "")
    return result.exit_code, "".join(text.split()), result


def _has(text: str, needle: str) -> bool:
    return "".join(needle.split()) in text


@pytest.fixture
def config(server, tmp_path):
    return write_toy_config(tmp_path / "c.toml", server.api_base, cache_dir=tmp_path / "cache",
                            runs_dir=tmp_path / "runs")


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------------------------- names and values
@pytest.mark.parametrize("args, needle", [
    (["eval", "--benchmark", "no-such-bench"], "unknown benchmark 'no-such-bench'"),
    (["eval", "--benchmark", "toy", "--program", "no-such-program"], "value: 'no-such-program'"),
    (["optimize", "--benchmark", "toy", "--out", "{tmp}/p", "--method", "no-such-method"],
     "value: 'no-such-method'"),
    (["eval", "--benchmark", "toy", "--lm", "gpt4"], "field: roles.agent.model"),
    (["eval", "--benchmark", "toy", "--split", "holdout"], "field: --split"),
    (["eval", "--benchmark", "toy", "--n", "0"], "field: --n"),
    (["eval", "--benchmark", "toy", "--workers", "0"], "field: --workers"),
    (["eval", "--benchmark", "toy", "--step-cap", "0"], "field: --step-cap"),
    (["eval", "--benchmark", "toy", "--n", "many"], "Invalid value for '--n'"),
    (["optimize", "--benchmark", "toy", "--out", "{tmp}/p", "--iterations", "0"], "--iterations"),
    (["optimize", "--benchmark", "toy", "--out", "{tmp}/p", "--batch", "0"], "--batch"),
    (["optimize", "--benchmark", "toy", "--out", "{tmp}/p", "--margin", "-1"], "--margin"),
    (["optimize", "--benchmark", "toy", "--out", "{tmp}/p", "--budget-time", "soon"], "soon"),
])
def test_unknown_names_and_bad_values(toy, server, config, tmp_path, args, needle):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args] + ["--config", str(config)]
    code, text, _ = _cli(args)
    assert code == 2, text
    assert _has(text, needle), text
    assert "Traceback" not in text
    assert server.stats.requests == 0
    assert not (tmp_path / "p").exists() or not list((tmp_path / "p").glob("v*.json"))


@pytest.mark.parametrize("model, needle", [
    ("local/no-such-model", "unknown local model 'local/no-such-model'"),
    ("nonexistentprovider/some-model", "roles.agent.model"),
])
def test_unknown_model_fails_before_work(toy, server, config, tmp_path, model, needle):
    """An unknown model stops the command with exit 2 and a line naming the setting, before any task runs (not one
    error result per task and exit 0, a run that 'succeeds' with score 0)."""
    code, text, _ = _cli(["eval", "--benchmark", "toy", "--n", "2", "--lm", model, "--config", str(config)])
    assert code == 2, text
    assert _has(text, needle), text
    assert not list((tmp_path / "runs").rglob("results.jsonl"))


# ---------------------------------------------------------------------------------------------- files
def test_config_file_errors_name_file_and_field(tmp_path):
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("retries = [\n")
    code, text, _ = _cli(["eval", "--benchmark", "toy", "--config", str(bad_toml)])
    assert code == 2 and _has(text, "not valid TOML") and _has(text, str(bad_toml))
    bad_value = tmp_path / "value.toml"
    bad_value.write_text("retries = -3\n")
    code, text, _ = _cli(["eval", "--benchmark", "toy", "--config", str(bad_value)])
    assert code == 2 and _has(text, "field: retries") and _has(text, "value: -3")
    assert bad_toml.read_text() == "retries = [\n" and bad_value.read_text() == "retries = -3\n"


def _benchmark_dir(tmp_path: Path, name: str, mutate) -> Path:
    source = SHARED / name
    if not (source / "dev.jsonl").is_file():
        pytest.skip(f"shared data for {name} is not available")
    target = tmp_path / f"{name}-data"
    target.mkdir()
    for split in ("train", "dev", "test"):
        with open(source / f"{split}.jsonl", encoding="utf-8") as fh:
            rows = [json.loads(next(fh)) for _ in range(2)]
        (target / f"{split}.jsonl").write_text(mutate(split, rows), encoding="utf-8")
    return target


@pytest.mark.parametrize("name, field", [("hotpotqa", "question"), ("hover", "claim")])
def test_malformed_json_row_names_file_and_line(tmp_path, monkeypatch, name, field):
    data = _benchmark_dir(tmp_path, name, lambda split, rows: json.dumps(rows[0]) + "\n{\"id\": \"broken\", \n")
    before = _digest(data)
    monkeypatch.setenv(f"NLGRAD_{name.upper()}_DIR", str(data))
    code, text, _ = _cli(["eval", "--benchmark", name, "--n", "1", "--runs-dir", str(tmp_path / "runs")])
    assert code == 2, text
    assert _has(text, "train.jsonl line 2 is not valid JSON"), text
    assert _digest(data) == before and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name, field", [("hotpotqa", "question"), ("hover", "claim")])
def test_row_missing_a_field_names_file_field_and_row(tmp_path, monkeypatch, name, field):
    """A data row without a required field is an error naming the file, the row and the field (not a KeyError
    traceback from the benchmark's tasks())."""
    def drop(split, rows):
        if split == "dev":
            rows[1].pop(field)
        return "".join(json.dumps(r) + "\n" for r in rows)

    data = _benchmark_dir(tmp_path, name, drop)
    before = _digest(data)
    monkeypatch.setenv(f"NLGRAD_{name.upper()}_DIR", str(data))
    code, text, _ = _cli(["eval", "--benchmark", name, "--split", "dev", "--n", "2", "--runs-dir",
                          str(tmp_path / "runs")])
    assert code == 2, text
    assert _has(text, "dev.jsonl") and _has(text, field), text
    assert _digest(data) == before


def test_corrupt_policy_file(toy, server, config, tmp_path):
    policy = tmp_path / "policy.json"
    policy.write_text('{"schema_version": 1, "program": "toy", "routes": {"toy.say": [{"text": 42, "kind": "x"}]}}')
    before = policy.read_bytes()
    code, text, _ = _cli(["eval", "--benchmark", "toy", "--policy", str(policy), "--config", str(config)])
    assert code == 2, text
    assert _has(text, str(policy)) and _has(text, "routes"), text
    assert policy.read_bytes() == before and server.stats.requests == 0


def _stopped_optimize(tmp_path, server, monkeypatch, *, crash_in_propose: bool):
    """An optimize dir after one iteration (or killed inside iteration 1, after its rollouts)."""
    import nlgrad.methods.nlpg as nlpg
    from nlgrad.methods.base import OptimizeConfig
    from nlgrad.optimize import run_optimize

    config = OptimizeConfig(benchmark="toy", iterations=2, batch=4, val=4, test_n=0)
    settings = toy_settings(tmp_path, server.api_base, cache="cache")
    if crash_in_propose:
        real = nlpg.NLPG.propose

        def crash(self, ws, memory, iteration):
            real(self, ws, memory, iteration)
            raise KeyboardInterrupt("killed")

        monkeypatch.setattr(nlpg.NLPG, "propose", crash)
        with pytest.raises(KeyboardInterrupt):
            run_optimize(config, settings, tmp_path / "p", progress=False)
        monkeypatch.setattr(nlpg.NLPG, "propose", real)
    else:
        run_optimize(config, settings, tmp_path / "p", progress=False, stop_after=1)
    return ["optimize", "--benchmark", "toy", "--out", str(tmp_path / "p"), "--iterations", "2", "--batch", "4",
            "--val", "4", "--test-n", "0", "--config", str(tmp_path / "c.toml")]


def test_corrupt_trace_on_resume(toy, server, config, tmp_path, monkeypatch):
    args = _stopped_optimize(tmp_path, server, monkeypatch, crash_in_propose=True)
    trace = sorted((tmp_path / "p/run/iter-0001/rollouts/traces").glob("*.json"))[0]
    trace.write_text('{"format": 1, "nodes": [{"id": "n0000"}], "edges": []')  # torn
    before = _digest(tmp_path / "p")

    def _inputs(digest):  # what the user may need: policies, state, traces, results (summaries are derived)
        digest = digest if isinstance(digest, dict) else _digest(digest)
        return {k: v for k, v in digest.items() if not k.endswith("summary.json")}

    code, text, _ = _cli(args)
    assert code == 2, text
    assert _has(text, str(trace)) and _has(text, "not valid JSON"), text
    assert _inputs(tmp_path / "p") == _inputs(before)


def test_corrupt_state_file_on_resume(toy, server, config, tmp_path, monkeypatch):
    """A corrupt run/state.json is an error naming that file (not a pydantic ValidationError traceback)."""
    args = _stopped_optimize(tmp_path, server, monkeypatch, crash_in_propose=False)
    state = tmp_path / "p/run/state.json"
    state.write_text('{"config_fingerprint": "abc", "completed": "two"}')
    before = _digest(tmp_path / "p")
    code, text, _ = _cli(args)
    assert code == 2, text
    assert _has(text, "state.json") and _has(text, "completed"), text
    assert _digest(tmp_path / "p") == before


# ---------------------------------------------------------------------------------------------- the LM cache
def _cache_rows(cache_dir: Path) -> list[tuple]:
    with sqlite3.connect(cache_dir / "cache.db") as db:
        return db.execute("SELECT rowid, key, mode, filename FROM Cache").fetchall()


@pytest.mark.parametrize("damage", ["wrong-shape", "bad-pickle", "missing-file"])
def test_corrupt_cache_entry_is_a_miss_and_is_repaired(toy, server, tmp_path, damage):
    from nlgrad.evaluate import EvalRequest, run_eval

    settings = toy_settings(tmp_path, server.api_base)
    first, _ = run_eval(EvalRequest(benchmark="toy", n=2, run_dir=str(tmp_path / "r1")), settings, progress=False)
    cache_dir = settings.cache_dir
    rows = _cache_rows(cache_dir)
    assert len(rows) == 2
    with sqlite3.connect(cache_dir / "cache.db") as db:
        rowid = rows[0][0]
        if damage == "wrong-shape":
            db.execute("UPDATE Cache SET mode = 4, value = ?, filename = NULL WHERE rowid = ?",
                       (pickle.dumps(["not", "a", "reply"]), rowid))
        elif damage == "bad-pickle":
            db.execute("UPDATE Cache SET mode = 4, value = ?, filename = NULL WHERE rowid = ?",
                       (b"\x80\x04garbage", rowid))
        else:
            db.execute("UPDATE Cache SET mode = 3, value = NULL, filename = 'aa/bb/missing.val' WHERE rowid = ?",
                       (rowid,))
    before = server.stats.requests
    second, lm = run_eval(EvalRequest(benchmark="toy", n=2, run_dir=str(tmp_path / "r2")), settings, progress=False)
    assert server.stats.requests - before == 1  # only the damaged entry was asked again
    assert [r.output for r in second.results] == [r.output for r in first.results]
    assert lm.ledger.total().cached == 1 and lm.ledger.total().calls == 1
    third, lm3 = run_eval(EvalRequest(benchmark="toy", n=2, run_dir=str(tmp_path / "r3")), settings, progress=False)
    assert lm3.ledger.total().cached == 2  # repaired


def test_corrupt_cache_database_is_a_clear_error(toy, server, tmp_path):
    """A corrupt LM cache database is a clear error (not sqlite3.DatabaseError 'file is not a database' escaping as a
    traceback)."""
    from nlgrad.evaluate import EvalRequest, run_eval

    settings = toy_settings(tmp_path, server.api_base)
    settings.cache_dir.mkdir(parents=True)
    (settings.cache_dir / "cache.db").write_bytes(b"this is not sqlite" * 64)
    with pytest.raises(NlgradError, match="cache_dir") as info:
        run_eval(EvalRequest(benchmark="toy", n=1, run_dir=str(tmp_path / "r")), settings, progress=False)
    assert str(settings.cache_dir) in str(info.value)
    assert server.stats.requests == 0
