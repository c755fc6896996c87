"""``LocalServers.stop`` signals a recorded process group only while it is still the recorded server. After a server
exits, its pid can be given to an unrelated process; stopping then must leave that process alone (before, it was
sent SIGTERM, then SIGKILL, with its whole process group). Stand-ins: Python processes that sleep in their own
session, recorded as if they were a server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from nlgrad.lm import local_server
from nlgrad.lm.local_server import LocalServers, ServerInfo

NAME = "qwen2.5-coder-0.5b"
FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "fake_model_server.py"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("NLGRAD_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(LocalServers, "_started_here", {})
    return tmp_path


@pytest.fixture
def sleeper():
    """Start a process in its own session whose command line ends with the given argument; killed at teardown."""
    procs: list[subprocess.Popen] = []

    def start(arg: str) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", arg],
                                start_new_session=True)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def _record(home: Path, pid: int, model_path: Path, **extra) -> Path:
    info = ServerInfo(name=NAME, pid=pid, port=9, model_path=str(model_path), owner="detached",
                      log_path=str(home / "x.log"), **extra)
    path = local_server.state_dir() / f"{NAME}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(info)))
    return path


def _still_running(proc: subprocess.Popen, wait_s: float = 0.5) -> bool:
    time.sleep(wait_s)
    return proc.poll() is None


def test_a_reused_pid_in_a_record_without_start_time_is_not_signalled(home, sleeper):
    """An older record (no start time): the process at the pid does not run the recorded model file."""
    other = sleeper("--some-other-program")
    state = _record(home, other.pid, home / "model.gguf")
    assert LocalServers().stop(NAME) is False
    assert _still_running(other), f"stop() killed pid {other.pid}, which is not the recorded server"
    assert not state.exists(), "the stale record should be dropped"


def test_a_reused_pid_with_another_start_time_is_not_signalled(home, sleeper):
    model = home / "model.gguf"
    other = sleeper(str(model))  # even a command line naming the model file: the start time decides
    started = local_server._process_start_time(other.pid)
    assert started is not None, "this test needs /proc"
    state = _record(home, other.pid, model, start_time=started - 1)
    assert LocalServers().stop(NAME) is False
    assert _still_running(other), f"stop() killed pid {other.pid}, which started after the recorded server"
    assert not state.exists()


def test_the_recorded_server_is_still_stopped(home, sleeper):
    model = home / "model.gguf"
    by_time = sleeper("--anything")
    _record(home, by_time.pid, model, start_time=local_server._process_start_time(by_time.pid))
    assert LocalServers().stop(NAME) is True
    assert by_time.wait(timeout=15) is not None
    by_cmdline = sleeper(str(model))  # an older record: the command line names the model file
    _record(home, by_cmdline.pid, model)
    assert LocalServers().stop(NAME) is True
    assert by_cmdline.wait(timeout=15) is not None


class StandInBackend:
    name, health_path = "llama-server", "/health"

    def slots(self, requested: int) -> int:
        return 1

    def command(self, spec):
        return [sys.executable, str(FAKE), "--port", str(spec.port)]

    def env(self):
        return {}


def test_a_started_server_records_its_start_time_and_stops(home, monkeypatch):
    gguf = home / "fake.gguf"
    gguf.write_bytes(b"not really a model")
    monkeypatch.setenv("NLGRAD_LOCAL_MODEL", str(gguf))
    servers = LocalServers(backend=StandInBackend(), slots=1)
    info = servers.ensure(NAME)
    try:
        recorded = json.loads((local_server.state_dir() / f"{NAME}.json").read_text())
        assert recorded["start_time"] == local_server._process_start_time(info.pid) is not None
    finally:
        assert servers.stop(NAME) is True
    assert not local_server._alive(info.pid) or local_server._process_start_time(info.pid) != info.start_time
