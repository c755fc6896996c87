"""SIGTERM and SIGINT end ``nlgrad eval`` cleanly: the finished tasks stay saved (whole lines, each with its trace),
one line says what was kept and the exact command that resumes, the exit status is 128 + the signal, and the local
model server the run started is stopped. The printed command then finishes the run without redoing a saved task.

Real CLI subprocesses (``toy_cli.py``) on the toy benchmark with the default local agent, served by the stand-in
server (tests/fixtures/fake_model_server.py) through ``NLGRAD_LLAMA_SERVER``: no model is loaded.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reliability_helpers import HERE

from nlgrad.lm import local_server
from nlgrad.lm.local_server import LocalServers
from nlgrad.runtime.rundir import RunDir

FAKE = HERE.parent / "fixtures" / "fake_model_server.py"
MODEL = "qwen2.5-coder-0.5b"
N = 8


def _env(tmp_path: Path) -> dict[str, str]:
    server = tmp_path / "llama-server"  # llama-server's command line, answered by the stand-in (0.4 s a reply)
    server.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" --delay 0.4 "$@"\n')
    server.chmod(0o755)
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"not really a model")
    env = {k: v for k, v in os.environ.items() if k not in ("NLGRAD_CONFIG", "NLGRAD_LOCAL_SERVER")}
    return {**env, "NLGRAD_HOME": str(tmp_path / "home"), "NLGRAD_LLAMA_SERVER": str(server),
            "NLGRAD_LOCAL_MODEL": str(gguf), "NLGRAD_LOCAL_SLOTS": "1",
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}


def _rows(run_dir: Path) -> list[dict]:
    path = run_dir / "results.jsonl"
    text = path.read_text() if path.exists() else ""
    assert not text or text.endswith("\n"), "results.jsonl ends in a half-written line"
    return [json.loads(line) for line in text.splitlines()]


def _wait(condition, limit_s: float, what: str) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_keeps_the_finished_tasks_says_how_to_resume_and_stops_the_server(tmp_path, monkeypatch,
                                                                                        signum):
    env = _env(tmp_path)
    monkeypatch.setenv("NLGRAD_HOME", env["NLGRAD_HOME"])
    runs = tmp_path / "runs"
    command = [sys.executable, str(HERE / "toy_cli.py"), "eval", "--benchmark", "toy", "--split", "dev", "--n",
               str(N), "--runs-dir", str(runs), "--no-cache"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: len(list(runs.glob("*/results.jsonl"))) == 1 and len(_rows(
            next(runs.glob("*/results.jsonl")).parent)) >= 2 or proc.poll() is not None, 120, "two finished tasks")
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        server = LocalServers().status(MODEL)
        assert server is not None and server.owner == "process"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()

    assert proc.returncode == 128 + signum, err[-3000:]
    run_dir = next(runs.glob("*/results.jsonl")).parent
    rows = _rows(run_dir)
    line = re.search(rf"stopped by {signal.Signals(signum).name}: (\d+) of {N} task results are saved in (\S+); "
                     r"resume with: (.+)", " ".join(err.split()))
    assert line, err[-3000:]
    assert int(line.group(1)) == len(rows) >= 2 and Path(line.group(2)) == run_dir
    assert len({r["task_id"] for r in rows}) == len(rows) < N
    assert all(RunDir(run_dir).trace_path(r["task_id"]).exists() for r in rows)  # each saved task with its trace
    resume = shlex.split(line.group(3))
    assert resume[0] == "nlgrad" and resume[1:] == command[2:] + ["--run-dir", str(run_dir)]

    # the server this run started is stopped (not left to `nlgrad local status` as owned by a dead process)
    assert not local_server._alive(server.pid) and not local_server._accepting(server.port)
    assert LocalServers().status(MODEL) is None
    assert not (local_server.state_dir() / f"{MODEL}.json").exists()

    if signum == signal.SIGTERM:  # the printed command finishes the run; no saved task runs again
        done = subprocess.run(command[:2] + resume[1:], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        final = _rows(run_dir)
        assert final[: len(rows)] == rows and len(final) == N == len({r["task_id"] for r in final})
