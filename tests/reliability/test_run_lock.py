"""Two writers on one directory: a second ``optimize`` on an ``--out`` (or ``eval`` on a ``--run-dir``) that a live
process holds is refused before any work, with a message naming that process; a lock left by a killed process never
blocks the next run."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys

import pytest
from reliability_helpers import toy_settings

from nlgrad.errors import ConfigError
from nlgrad.evaluate import EvalRequest, run_eval
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize
from nlgrad.policy import PolicyStore
from nlgrad.runlock import LOCK_NAME, RunLock, read_holder

HOLD = """
import sys, time
from nlgrad.runlock import RunLock
lock = RunLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(120)
"""


@pytest.fixture
def holder(tmp_path):
    """Start a process that holds the lock on a directory; yields (process, directory)."""
    procs = []

    def start(directory):
        proc = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout.readline().strip() == "held"
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def _config(**kw):
    return OptimizeConfig(**{"benchmark": "toy", "iterations": 1, "batch": 2, "val": 2, "test_n": 0, **kw})


def test_second_optimize_on_a_held_out_is_refused_naming_the_holder(toy, server, tmp_path, holder):
    out = tmp_path / "p"
    proc = holder(out)
    with pytest.raises(ConfigError) as info:
        run_optimize(_config(), toy_settings(tmp_path, server.api_base), out, progress=False)
    message = str(info.value)
    assert f"pid {proc.pid}" in message and "in use by another nlgrad process" in message
    assert "field: --out" in message
    assert server.stats.requests == 0
    assert PolicyStore(out).versions() == []  # nothing committed, not even the initial version
    assert not (out / "run" / "config.json").exists()


def test_lock_of_a_killed_process_does_not_block(toy, server, tmp_path, holder, caplog):
    out = tmp_path / "p"
    proc = holder(out)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert read_holder(out / LOCK_NAME)["pid"] == proc.pid  # the dead process's record is still in the file
    with caplog.at_level(logging.WARNING, logger="nlgrad.runlock"):
        outcome = run_optimize(_config(), toy_settings(tmp_path, server.api_base), out, progress=False)
    assert outcome.state.finished
    assert f"pid {proc.pid}" in caplog.text and "taking over" in caplog.text
    assert read_holder(out / LOCK_NAME) == {}  # released at the end


def test_eval_on_a_held_run_dir_is_refused(toy, server, tmp_path, holder):
    run_dir = tmp_path / "run"
    proc = holder(run_dir)
    request = EvalRequest(benchmark="toy", n=2, workers=1, run_dir=str(run_dir))
    with pytest.raises(ConfigError, match=f"pid {proc.pid}") as info:
        run_eval(request, toy_settings(tmp_path, server.api_base), progress=False)
    assert "field: --run-dir" in str(info.value)
    assert server.stats.requests == 0 and not (run_dir / "results.jsonl").exists()


def test_a_second_lock_in_the_same_process_is_refused(tmp_path):
    with RunLock(tmp_path / "d"):
        with pytest.raises(ConfigError, match=f"pid {os.getpid()}"):
            RunLock(tmp_path / "d").acquire()
    with RunLock(tmp_path / "d"):  # released: free again
        pass


def test_lock_is_released_when_the_run_fails(toy, server, tmp_path, monkeypatch):
    import nlgrad.optimize as optimize

    def broken(*a, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(optimize, "_reconcile", broken)
    with pytest.raises(RuntimeError, match="boom"):
        run_optimize(_config(), toy_settings(tmp_path, server.api_base), tmp_path / "p", progress=False)
    with RunLock(tmp_path / "p"):
        pass
