"""End to end against the real embedded model: `nlgrad eval` on TWX coin, then an identical rerun from cache."""

import json
import os
import subprocess
import sys

import pytest
from local_server_check import require_local_server

from nlgrad.config import RoleConfig, Settings
from nlgrad.lm.client import LM

pytestmark = pytest.mark.local_model

require_local_server()


def _eval(tmp_path, *extra):
    cmd = [sys.executable, "-m", "nlgrad.cli", "eval", "--benchmark", "twx/coin", "--split", "dev", "--n", "2",
           "--step-cap", "6", "--cache-dir", str(tmp_path / "cache"), "--runs-dir", str(tmp_path / "runs"), *extra]
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)


def test_eval_cli_on_twx_with_local_model_then_cached_rerun(tmp_path):
    first = _eval(tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "eval twx/coin / dev" in first.stdout and "agent" in first.stdout
    (run1,) = sorted((tmp_path / "runs").iterdir())
    results = [json.loads(line) for line in (run1 / "results.jsonl").read_text().splitlines()]
    assert len(results) == 2 and all(r["error"] is None for r in results)
    assert all(1 <= r["steps"] <= 6 for r in results)
    ledger = json.loads((run1 / "ledger.json").read_text())
    assert ledger["roles"]["agent"]["calls"] > 0 and ledger["roles"]["agent"]["prompt_tokens"] > 0
    assert len(list((run1 / "traces").glob("*.json"))) == 2

    second = _eval(tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    run2 = max((tmp_path / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    ledger2 = json.loads((run2 / "ledger.json").read_text())
    assert ledger2["roles"]["agent"]["calls"] == 0
    assert ledger2["roles"]["agent"]["cached"] == ledger["roles"]["agent"]["calls"]
    results2 = [json.loads(line) for line in (run2 / "results.jsonl").read_text().splitlines()]
    key = lambda r: (r["task_id"], r["score"], r["steps"], r["output"])  # noqa: E731
    assert sorted(map(key, results2)) == sorted(map(key, results))


def test_local_server_is_started_once_and_reused(tmp_path):
    role = RoleConfig(model="local/qwen2.5-coder-0.5b", max_tokens=8)
    settings = Settings(roles={"agent": role}, use_cache=False)
    a, b = LM(settings), LM(settings)
    msg = [{"role": "user", "content": "Reply with the word yes."}]
    out = a.complete("agent", msg)
    assert out.text.strip() and out.completion_tokens > 0 and out.cost_usd == 0.0
    info_a = a.servers.status("qwen2.5-coder-0.5b")
    b.complete("agent", msg)
    assert b.servers.status("qwen2.5-coder-0.5b").pid == info_a.pid
