"""Run a local model server that stops when the process that started it is gone.

``python server_watchdog.py STARTER_PID -- SERVER_ARGV...`` starts the server as its child (same process group,
same stdout/stderr) and checks twice a second that its own parent is still ``STARTER_PID``. When the starter is
gone (it exited, or was killed with SIGKILL and never ran its atexit handlers), the watchdog sends the server
SIGTERM, SIGKILL after ``GRACE_S``, and exits. A SIGTERM or SIGINT to the watchdog is passed on to the server the
same way. It exits with the server's status, so a server that could not bind its port is still reported as such.

A server an nlgrad run starts for itself runs under this watchdog (:func:`watched`); one started with ``nlgrad local
start`` does not (it stays until ``nlgrad local stop``). Stdlib only and run by its path, so it starts in
milliseconds without importing nlgrad.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

POLL_S = 0.5
GRACE_S = 10.0


def watched(argv: list[str], starter_pid: int | None = None) -> list[str]:
    """``argv`` run under the watchdog of ``starter_pid`` (default: this process)."""
    pid = os.getpid() if starter_pid is None else starter_pid
    return [sys.executable, str(Path(__file__).resolve()), str(pid), "--", *argv]


def _stop(server: subprocess.Popen) -> int:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            server.kill()
    return server.wait()


def _status(code: int) -> int:
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell reports it


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: server_watchdog.py STARTER_PID -- SERVER_ARGV...", file=sys.stderr)
        return 2
    starter = int(argv[0])
    stop_requested: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop_requested.append(signum))
    server = subprocess.Popen(argv[2:], stdin=subprocess.DEVNULL)
    while True:
        if stop_requested or os.getppid() != starter:
            return _status(_stop(server))
        try:
            return _status(server.wait(timeout=POLL_S))
        except subprocess.TimeoutExpired:
            continue


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
