"""The local server's lifecycle, against a stand-in server process (tests/fixtures/fake_model_server.py): start and
health wait, slots recorded and followed by the client, a server that dies restarted once, a taken port detected,
and the backend choice (llama-server, the Python fallback, bad settings)."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from fixtures.fake_backend import FAKE, FakeBackend, fake_model_home

from nlgrad.config import RoleConfig, Settings
from nlgrad.errors import LMCallError, LocalModelError
from nlgrad.lm import local_server, server_backends
from nlgrad.lm.client import LM
from nlgrad.lm.local_server import LocalServers
from nlgrad.lm.server_backends import LaunchSpec, LlamaServer, PythonServer, select_backend


@pytest.fixture
def home(tmp_path, monkeypatch):
    fake_model_home(tmp_path, monkeypatch)
    yield tmp_path
    for name, info in list(LocalServers._started_here.items()):
        LocalServers().stop(name, only_pid=info.pid)


def local_lm(servers: LocalServers, tmp_path: Path) -> LM:
    role = RoleConfig(model="local/qwen2.5-coder-0.5b", max_tokens=8, timeout_s=20)
    settings = Settings(roles={"agent": role, "critic": role}, use_cache=False, retries=2,
                        backoff_base_s=0.01, backoff_max_s=0.02, runs_dir=tmp_path / "runs")
    return LM(settings, servers=servers)


def test_start_records_backend_and_slots_and_the_client_follows_them(home):
    log = home / "concurrency.log"
    servers = LocalServers(backend=FakeBackend(delay=0.4, concurrency_log=log), slots=3)
    lm = local_lm(servers, home)
    assert lm.parallelism("agent") == 3  # known before any server runs
    info = servers.ensure("qwen2.5-coder-0.5b")
    assert (info.backend, info.slots) == ("llama-server", 3)
    threads = [threading.Thread(target=lm.complete, args=("agent", [{"role": "user", "content": f"q{i}"}]))
               for i in range(7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    in_flight = [int(x) for x in log.read_text().split()]
    assert len(in_flight) == 7
    assert max(in_flight) == 3  # as many at once as the slots, never more
    assert lm.ledger.total().calls == 7


def test_a_server_that_dies_is_restarted_once_then_reported(home):
    servers = LocalServers(backend=FakeBackend(), slots=1)
    lm = local_lm(servers, home)
    first = lm.complete("agent", [{"role": "user", "content": "a"}])
    pid1 = servers.status("qwen2.5-coder-0.5b").pid  # the server's watchdog, leader of its process group
    assert first.text.startswith("reply from pid ")
    os.killpg(pid1, signal.SIGKILL)
    _wait_dead(pid1)
    second = lm.complete("agent", [{"role": "user", "content": "b"}])  # retried after one restart
    pid2 = servers.status("qwen2.5-coder-0.5b").pid
    assert pid2 != pid1 and second.text.startswith("reply from pid ") and second.text != first.text
    os.killpg(pid2, signal.SIGKILL)
    _wait_dead(pid2)
    with pytest.raises(LMCallError, match="died again after 1 restart"):
        lm.complete("agent", [{"role": "user", "content": "c"}])


def test_a_port_taken_before_the_server_binds_is_detected_and_another_is_used(home, monkeypatch, caplog):
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))  # bound, not listening: looks free to a connect probe, but bind fails
    taken = squatter.getsockname()[1]
    ports = iter([taken])
    real_free_port = local_server._free_port
    monkeypatch.setattr(local_server, "_free_port", lambda: next(ports, None) or real_free_port())
    backend = FakeBackend()
    try:
        with caplog.at_level("WARNING"):
            info = LocalServers(backend=backend, slots=1).ensure("qwen2.5-coder-0.5b")
    finally:
        squatter.close()
    assert backend.ports[0] == taken and info.port != taken and len(backend.ports) == 2
    assert any(f"port {taken} was taken" in r.getMessage() for r in caplog.records)
    assert LocalServers().status("qwen2.5-coder-0.5b").port == info.port


def test_a_server_that_exits_for_another_reason_is_reported_with_its_log(home):
    class Crashing(FakeBackend):
        def command(self, spec):
            return [sys.executable, "-c", "print('model file is corrupt'); raise SystemExit(3)"]

    with pytest.raises(LocalModelError, match=r"exited with code 3(.|\n)*model file is corrupt"):
        LocalServers(backend=Crashing(), slots=1).ensure("qwen2.5-coder-0.5b")


def _wait_dead(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            waited, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if waited:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} did not die")


# ---- choosing the server program -------------------------------------------------------------------------------
def test_llama_server_command_sizes_slots_and_context(tmp_path):
    spec = LaunchSpec(model_path=tmp_path / "m.gguf", alias="m", port=1234, threads=2, n_ctx=8192, slots=4,
                      draft_path=tmp_path / "d.gguf")
    cmd = LlamaServer(tmp_path / "llama-server").command(spec)
    arg = {flag: cmd[i + 1] for i, flag in enumerate(cmd[:-1]) if flag.startswith("--")}
    assert arg["--parallel"] == "4" and arg["--ctx-size"] == str(4 * 8192)  # each slot keeps 8192 tokens
    assert arg["--model-draft"] == str(tmp_path / "d.gguf") and arg["--port"] == "1234"
    assert LlamaServer(tmp_path / "llama-server").env()["LD_LIBRARY_PATH"].startswith(str(tmp_path))
    assert PythonServer().slots(4) == 1 and "llama_cpp.server" in PythonServer().command(spec)


def test_backend_choice(tmp_path, monkeypatch, caplog):
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("NLGRAD_LLAMA_SERVER", str(binary))
    assert isinstance(select_backend("auto"), LlamaServer)
    monkeypatch.setenv("NLGRAD_LLAMA_SERVER", str(tmp_path / "absent"))
    with pytest.raises(LocalModelError, match="absent"):
        select_backend("auto")
    monkeypatch.delenv("NLGRAD_LLAMA_SERVER")
    monkeypatch.setattr(server_backends, "find_llama_server", lambda: None)
    monkeypatch.setattr(server_backends, "python_server_installed", lambda: True)
    monkeypatch.setattr(server_backends, "_warned_fallback", False)
    with caplog.at_level("WARNING"):
        assert isinstance(select_backend("auto"), PythonServer)
        assert isinstance(select_backend("auto"), PythonServer)
    assert sum("llama-server not found" in r.getMessage() for r in caplog.records) == 1  # one line, once
    with pytest.raises(LocalModelError, match="no llama-server binary"):
        select_backend("llama-server")
    monkeypatch.setattr(server_backends, "python_server_installed", lambda: False)
    with pytest.raises(LocalModelError, match="scripts/install.sh"):
        select_backend("auto")
    with pytest.raises(LocalModelError, match="NLGRAD_LOCAL_SERVER='fast'"):
        select_backend("fast")
    monkeypatch.setenv("NLGRAD_LOCAL_SLOTS", "0")
    with pytest.raises(LocalModelError, match="NLGRAD_LOCAL_SLOTS=0"):
        server_backends.requested_slots()


def test_an_explicit_server_choice_refuses_a_running_server_of_the_other_kind(home, monkeypatch):
    servers = LocalServers(backend=FakeBackend(), slots=1)
    info = servers.ensure("qwen2.5-coder-0.5b")
    monkeypatch.setenv("NLGRAD_LOCAL_SERVER", "python")
    with pytest.raises(LocalModelError, match=rf"llama-server server for 'qwen2.5-coder-0.5b' is running \(pid {info.pid}\)"):
        servers.ensure("qwen2.5-coder-0.5b")
    monkeypatch.setenv("NLGRAD_LOCAL_SERVER", "auto")
    assert servers.ensure("qwen2.5-coder-0.5b").pid == info.pid  # auto reuses whatever runs


def test_a_sigterm_to_the_starting_process_stops_its_servers(home):
    """`kill PID` of an nlgrad process must not leave its model servers running on the machine's cores."""
    import subprocess
    import textwrap

    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(FAKE.parent.parent)!r})
        from fixtures.fake_backend import FakeBackend
        from nlgrad.lm.local_server import LocalServers
        info = LocalServers(backend=FakeBackend(), slots=1).ensure("qwen2.5-coder-0.5b")
        print(info.pid, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    server_pid = int(proc.stdout.readline())
    assert local_server._alive(server_pid)
    proc.terminate()
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 15
    while local_server._alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not local_server._alive(server_pid)


def _gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaped counts as gone: PID 1 here may not reap orphans)."""
    if not local_server._alive(pid):
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def test_a_server_whose_starter_died_exits_by_itself_unless_it_was_detached(home):
    """SIGKILL runs no atexit handler: the server a run started must still go (its watchdog sees the starter gone);
    a server started detached (`nlgrad local start`) must stay."""
    import subprocess
    import textwrap

    gguf = home / "fake.gguf"
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(FAKE.parent.parent)!r})
        from fixtures.fake_backend import FakeBackend
        from nlgrad.lm.local_server import LocalServers
        servers = LocalServers(user_models={{"detached-one": {str(gguf)!r}}}, backend=FakeBackend(), slots=1)
        owned = servers.ensure("qwen2.5-coder-0.5b")
        detached = servers.ensure("detached-one", detached=True)
        print(owned.pid, owned.port, detached.pid, detached.port, flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        owned_pid, owned_port, detached_pid, detached_port = map(int, proc.stdout.readline().split())
        assert local_server._accepting(owned_port) and local_server._accepting(detached_port)
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20
        while not (_gone(owned_pid) and not local_server._accepting(owned_port)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(owned_pid) and not local_server._accepting(owned_port), "the orphaned server kept running"
        assert LocalServers().status("qwen2.5-coder-0.5b") is None
        time.sleep(1.5)  # three watchdog polls: a detached server has none and stays
        assert not _gone(detached_pid) and local_server._accepting(detached_port)
    finally:
        proc.kill()
        assert LocalServers().stop("detached-one") is True
