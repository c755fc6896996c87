"""One live writer per output directory (``optimize --out``, ``eval --run-dir``).

Two processes writing one directory corrupt it quietly (both start from v1 and commit v2 and v3 with parent 1;
state.json and the iteration folders are overwritten by whichever writes last). :class:`RunLock` holds an exclusive
``flock`` on ``DIR/.run.lock`` for the whole run and writes who holds it (pid, host, start time, command) into the
file, so a second writer is refused at once with a message naming the holder.

The kernel drops a ``flock`` when its process dies, however it dies, so a lock left by a killed process never blocks:
the next run takes it over (and says whose it was). Nothing is unlinked (removing a lock file while another process
opens it would let two holders lock two different files); a released lock file is left empty.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from nlgrad.errors import ConfigError

LOCK_NAME = ".run.lock"
log = logging.getLogger(__name__)


def _holder_text(info: dict[str, Any]) -> str:
    if not info:
        return "another process (no details recorded)"
    started = info.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if isinstance(started, (int, float)) else "?"
    return (f"pid {info.get('pid', '?')} on {info.get('host', '?')}, started {when}: "
            f"{info.get('command', '?')}")


def read_holder(path: Path) -> dict[str, Any]:
    """What the lock file says about its holder (empty when released, unreadable or never written)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class RunLock:
    """``with RunLock(directory, field="--out"):`` holds ``directory`` for this process or raises ConfigError."""

    def __init__(self, directory: str | Path, *, field: str = "--out"):
        self.directory = Path(directory)
        self.path = self.directory / LOCK_NAME
        self.field = field
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = read_holder(self.path)
            raise ConfigError(f"this directory is in use by another nlgrad process ({_holder_text(holder)}); wait for "
                              "it to finish or stop it, or choose another directory", field=self.field,
                              value=str(self.directory)) from None
        previous = read_holder(self.path)
        if previous:  # written by a process that died without releasing (the kernel dropped its flock)
            log.warning("%s: taking over a lock left by a process that is gone (%s)", self.directory,
                        _holder_text(previous))
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
                "command": " ".join(sys.argv)[:300]}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # before the unlock: an empty file means "not held"
        except OSError:
            pass
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
