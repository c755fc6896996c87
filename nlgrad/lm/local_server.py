"""Serve a local GGUF on 127.0.0.1 (``llama-server``, or ``llama_cpp.server`` as fallback) and route litellm to it.

``ensure(name)`` reuses a live server recorded in the state dir, or starts one on a free port, waits for health and
records it (backend, slots). A server this process started that dies is started again once (``MAX_RESTARTS``); a port
that another program took between choosing and binding is detected from the server's exit and another one is tried.
Servers this process started are stopped at exit and when a run is stopped by SIGTERM or SIGINT
(:mod:`nlgrad.interrupt`), and each runs under a watchdog (:mod:`nlgrad.lm.server_watchdog`) that stops it when this
process is gone however it ended (SIGKILL included); ``nlgrad local start`` starts a detached one, without watchdog,
that stays until ``nlgrad local stop``. Calls go through litellm's OpenAI-compatible provider (``openai/<alias>`` + api_base).
Which program serves is decided in :mod:`nlgrad.lm.server_backends`.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from nlgrad.config import default_cache_root
from nlgrad.errors import LocalModelError
from nlgrad.files import file_lock, write_json_atomic
from nlgrad.interrupt import STOPPING, on_stop, raise_if_stopping
from nlgrad.lm.local_models import resolve_model_file
from nlgrad.lm.server_backends import LaunchSpec, ServerBackend, requested_slots, select_backend
from nlgrad.lm.server_watchdog import watched

log = logging.getLogger(__name__)

LOCAL_API_KEY = "sk-local-no-key"  # the local servers ignore it; litellm's openai provider wants one
MAX_RESTARTS = 1  # a server this process started that dies is started again this many times
PORT_TRIES = 3  # a port taken between choosing and binding: try this many ports
_PORT_TAKEN = ("address already in use", "couldn't bind", "could not bind", "errno 98")


@dataclass
class ServerInfo:
    name: str
    pid: int  # the server's process, or the watchdog it runs under (the leader of the server's process group)
    port: int
    model_path: str
    owner: str  # "process" (stopped at exit of its starter) or "detached"
    log_path: str
    backend: str = "python"  # "llama-server" or "python" (a record without this field is a python server's)
    slots: int = 1  # requests it serves at once
    start_time: int | None = None  # /proc/<pid>/stat start time (clock ticks after boot): tells a reused pid apart

    def is_running_process(self) -> bool:
        """Whether ``pid`` is still this server (not a process that got its pid after the server exited): the start
        time recorded when it was started must match, or, for a record without one, the command line must name the
        model file. Where ``/proc`` cannot say (not Linux), a live pid is taken as the server."""
        if not _alive(self.pid):
            return False
        started = _process_start_time(self.pid)
        if self.start_time is not None and started is not None:
            return started == self.start_time
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return started is None  # no /proc at all: cannot tell, so a live pid counts as the server; else it is gone
        return os.fsencode(self.model_path) in cmdline

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def state_dir() -> Path:
    return default_cache_root() / "servers"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(port: int, timeout: float = 2.0, path: str = "/v1/models") -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as resp:
            return resp.status == 200
    except OSError:
        return False


def _accepting(port: int, timeout: float = 2.0) -> bool:
    """True if something accepts TCP connections on the port (a busy server still does; HTTP may be slow)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _process_start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat`` (when the process started, in clock ticks after boot); None without /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def free_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class LocalServers:
    """Starts, finds and stops local model servers. One instance per process is enough; it is cheap."""

    _started_here: dict[str, ServerInfo] = {}
    _restarts: dict[str, int] = {}
    _lock = threading.Lock()

    def __init__(self, user_models: dict[str, Path] | None = None, n_ctx: int | None = None,
                 backend: ServerBackend | None = None, slots: int | None = None):
        self.user_models = user_models or {}
        self.n_ctx = n_ctx or int(os.environ.get("NLGRAD_LOCAL_CTX", "8192"))
        self._backend = backend
        self._slots = slots

    @property
    def backend(self) -> ServerBackend:
        if self._backend is None:
            self._backend = select_backend()
        return self._backend

    def slots_for(self, name: str) -> int:
        """How many requests the server for ``name`` serves at once: the running one's, else what a start would
        configure."""
        info = self.status(name)
        if info is not None:
            return info.slots
        return self.backend.slots(self._slots or requested_slots())

    def _state_file(self, name: str) -> Path:
        return state_dir() / f"{name}.json"

    def _recorded(self, name: str) -> ServerInfo | None:
        path = self._state_file(name)
        if not path.exists():
            return None
        try:
            return ServerInfo(**json.loads(path.read_text()))
        except (ValueError, TypeError):
            return None

    def status(self, name: str) -> ServerInfo | None:
        """The recorded server if its process is alive and accepts connections. A server busy with a long request
        answers HTTP slowly, so liveness is judged by the process and the TCP port, never by a health timeout
        (which would start a second server under load)."""
        info = self._recorded(name)
        if info is not None and _alive(info.pid) and _accepting(info.port):
            return info
        return None

    def ensure(self, name: str, *, detached: bool = False, startup_timeout_s: float = 300.0) -> ServerInfo:
        raise_if_stopping()  # a run being stopped starts (or restarts) no server
        with self._lock, file_lock(state_dir() / f"{name}.lock"):
            info = self.status(name)
            if info is not None:
                wanted = (os.environ.get("NLGRAD_LOCAL_SERVER") or "auto").strip().lower()
                if wanted != "auto" and info.backend != wanted:
                    raise LocalModelError(f"NLGRAD_LOCAL_SERVER={wanted} but a {info.backend} server for '{name}' is "
                                          f"running (pid {info.pid}); stop it first: nlgrad local stop {name}")
                return info
            died = LocalServers._started_here.get(name)
            if died is not None:  # this process started it, and it is gone: restart once, then give up
                count = LocalServers._restarts.get(name, 0)
                tail = _log_tail(Path(died.log_path), 600)
                if count >= MAX_RESTARTS:
                    raise LocalModelError(f"local server for '{name}' died again after {count} restart(s); "
                                          f"not restarting. Log tail ({died.log_path}):\n{tail}")
                LocalServers._restarts[name] = count + 1
                log.warning("local server for '%s' (pid %s) died; restarting it once. Log tail:\n%s",
                            name, died.pid, tail)
            return self._start(name, detached=detached, startup_timeout_s=startup_timeout_s)

    def _start(self, name: str, *, detached: bool, startup_timeout_s: float) -> ServerInfo:
        backend = self.backend
        model = resolve_model_file(name, self.user_models)
        slots = backend.slots(self._slots or requested_slots())
        draft = os.environ.get("NLGRAD_LOCAL_DRAFT")
        draft_path = (resolve_model_file(draft, self.user_models).path
                      if draft and draft != name and backend.name == "llama-server" else None)
        log_path = state_dir() / f"{name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in range(PORT_TRIES):
            port = _free_port()
            if _accepting(port, timeout=0.5):  # someone bound it since the kernel called it free
                continue
            spec = LaunchSpec(model_path=model.path, alias=name, port=port, threads=free_cores(), n_ctx=self.n_ctx,
                              slots=slots, draft_path=draft_path)
            offset = log_path.stat().st_size if log_path.exists() else 0
            argv = backend.command(spec) if detached else watched(backend.command(spec))
            with open(log_path, "ab") as log_file:
                proc = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        env={**os.environ, **backend.env()})
            if self._wait_healthy(proc, port, backend.health_path, startup_timeout_s, name, log_path, offset):
                break
        else:
            raise LocalModelError(f"local server for '{name}': {PORT_TRIES} ports were taken before it could bind")
        info = ServerInfo(name=name, pid=proc.pid, port=port, model_path=str(model.path),
                          owner="detached" if detached else "process", log_path=str(log_path),
                          backend=backend.name, slots=slots, start_time=_process_start_time(proc.pid))
        write_json_atomic(self._state_file(name), asdict(info))
        if not detached:
            LocalServers._started_here[name] = info
            on_stop(stop_started_here)
            _exit_on_sigterm()
        return info

    @staticmethod
    def _wait_healthy(proc: subprocess.Popen, port: int, health_path: str, timeout_s: float, name: str,
                      log_path: Path, offset: int) -> bool:
        """True once healthy; False if the server exited because its port was taken; raises on other failures."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if STOPPING.is_set():
                _terminate(proc.pid)
                raise_if_stopping()
            if proc.poll() is not None:
                tail = _log_tail(log_path, 2000, offset)
                if any(mark in tail.lower() for mark in _PORT_TAKEN):
                    log.warning("local server for '%s': port %d was taken; trying another", name, port)
                    return False
                raise LocalModelError(f"local server for '{name}' exited with code {proc.returncode}; "
                                      f"log tail:\n{tail}")
            if _healthy(port, path=health_path):
                return True
            time.sleep(0.5)
        _terminate(proc.pid)
        raise LocalModelError(f"local server for '{name}' did not become healthy in {timeout_s:.0f}s; see {log_path}")

    def stop(self, name: str, only_pid: int | None = None) -> bool:
        """Stop the recorded server for ``name`` (or only the process ``only_pid``, if given). Returns True if a
        server process was running. The state file is removed only if it names the stopped process. A recorded pid
        that now belongs to another process (the server exited and the pid was reused) is never signalled: the
        record is dropped as stale and False returned."""
        info = self._recorded(name)
        pid = only_pid if only_pid is not None else (info.pid if info else None)
        started = LocalServers._started_here.pop(name, None)
        if pid is None:
            return False
        known = next((i for i in (info, started) if i is not None and i.pid == pid), None)
        running = known.is_running_process() if known is not None else _alive(pid)
        if running:
            _terminate(pid)
        elif known is not None and _alive(pid):
            log.warning("local server for '%s': pid %d now belongs to another process (the server is gone); "
                        "not signalling it, dropping the stale record", name, pid)
        if info is not None and info.pid == pid:
            self._state_file(name).unlink(missing_ok=True)
        return running


def _log_tail(path: Path, chars: int, offset: int = 0) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", errors="replace")[-chars:]
    except OSError:
        return ""


def _terminate(pid: int, grace_s: float = 10.0) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            waited, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            waited = pid if not _alive(pid) else 0
        if waited:
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _exit_on_sigterm() -> None:
    """A plain SIGTERM ends Python without running atexit, which would leave the servers this process started
    running (and competing for the cores). Where SIGTERM still has its default action and this is the main thread,
    it becomes a normal exit (status 143), so they are stopped."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


_stopping_lock = threading.Lock()


@atexit.register
def stop_started_here() -> None:
    """Stop every server this process started (at exit, and when a run is stopped by a signal; one at a time)."""
    with _stopping_lock:
        for name, info in list(LocalServers._started_here.items()):
            LocalServers().stop(name, only_pid=info.pid)
