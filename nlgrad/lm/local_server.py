"""Serve a local GGUF with ``llama_cpp.server`` on 127.0.0.1 and route litellm calls to it.

``ensure(name)`` reuses a healthy server recorded in the state dir, or starts one on a free port, waits for health and
records it. Servers this process started are stopped at exit; ``nlgrad local start`` starts a detached one that stays
until ``nlgrad local stop``. Calls go through litellm's OpenAI-compatible provider (``openai/<alias>`` + api_base).
"""

from __future__ import annotations

import atexit
import json
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
from nlgrad.lm.local_models import resolve_model_file

LOCAL_API_KEY = "sk-local-no-key"  # llama_cpp.server ignores it; litellm's openai provider wants one


@dataclass
class ServerInfo:
    name: str
    pid: int
    port: int
    model_path: str
    owner: str  # "process" (stopped at exit of its starter) or "detached"
    log_path: str

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def state_dir() -> Path:
    return default_cache_root() / "servers"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(port: int, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=timeout) as resp:
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


def free_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class LocalServers:
    """Starts, finds and stops local model servers. One instance per process is enough; it is cheap."""

    _started_here: dict[str, ServerInfo] = {}
    _lock = threading.Lock()

    def __init__(self, user_models: dict[str, Path] | None = None, n_ctx: int | None = None):
        self.user_models = user_models or {}
        self.n_ctx = n_ctx or int(os.environ.get("NLGRAD_LOCAL_CTX", "8192"))

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
        with self._lock, file_lock(state_dir() / f"{name}.lock"):
            info = self.status(name)
            if info is not None:
                return info
            return self._start(name, detached=detached, startup_timeout_s=startup_timeout_s)

    def _start(self, name: str, *, detached: bool, startup_timeout_s: float) -> ServerInfo:
        try:
            import llama_cpp.server  # noqa: F401
        except ImportError as exc:
            raise LocalModelError(
                "the local model server needs llama-cpp-python[server]: install nlgrad's 'local' extra with "
                "CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install 'nlgrad[local]'" f" ({exc})"
            ) from None
        model = resolve_model_file(name, self.user_models)
        port = _free_port()
        log_path = state_dir() / f"{name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model.path), "--model_alias", name,
            "--host", "127.0.0.1", "--port", str(port),
            "--n_threads", str(free_cores()), "--n_ctx", str(self.n_ctx),
        ]
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        deadline = time.monotonic() + startup_timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise LocalModelError(f"local server for '{name}' exited with code {proc.returncode}; log tail:\n{tail}")
            if _healthy(port):
                break
            time.sleep(0.5)
        else:
            proc.kill()
            raise LocalModelError(f"local server for '{name}' did not become healthy in {startup_timeout_s:.0f}s; "
                                  f"see {log_path}")
        info = ServerInfo(name=name, pid=proc.pid, port=port, model_path=str(model.path),
                          owner="detached" if detached else "process", log_path=str(log_path))
        write_json_atomic(self._state_file(name), asdict(info))
        if not detached:
            LocalServers._started_here[name] = info
        return info

    def stop(self, name: str, only_pid: int | None = None) -> bool:
        """Stop the recorded server for ``name`` (or only the process ``only_pid``, if given). Returns True if a
        server process was running. The state file is removed only if it names the stopped process."""
        info = self._recorded(name)
        pid = only_pid if only_pid is not None else (info.pid if info else None)
        LocalServers._started_here.pop(name, None)
        if pid is None:
            return False
        running = _alive(pid)
        if running:
            _terminate(pid)
        if info is not None and info.pid == pid:
            self._state_file(name).unlink(missing_ok=True)
        return running


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


@atexit.register
def _stop_started_here() -> None:
    for name, info in list(LocalServers._started_here.items()):
        LocalServers().stop(name, only_pid=info.pid)
