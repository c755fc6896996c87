"""Append-only JSON-lines files that stay readable after a torn write.

A writer killed mid-append (or stopped by a full disk) leaves a last line without its newline. Appending after it
would either glue the next record onto the fragment (one unreadable line: both records lost) or leave the fragment
in the middle of the file, where strict readers fail on every later run. :func:`append_line` therefore repairs the
tail first: the fragment is moved to ``<file>.torn`` (kept for inspection, never read back), the file is cut back to
its last complete line, and one warning says so. A write that fails part-way (ENOSPC, EIO) is cut back the same
way before the error propagates (as StorageError for a full or failing disk), so the file never ends in a
fragment written by this process.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from nlgrad.files import storage_error

log = logging.getLogger("nlgrad.journal")

_CHUNK = 4096


def _last_newline_end(fd: int, size: int) -> int:
    """The offset just after the last ``\\n`` in the file (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - _CHUNK)
        block = os.pread(fd, end - start, start)
        cut = block.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def _repair_tail(fd: int, path: Path) -> int:
    """Cut a torn last line off the open file ``fd`` (saved to ``<path>.torn``). Returns the bytes removed."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    keep = _last_newline_end(fd, size)
    fragment = os.pread(fd, size - keep, keep)
    torn = path.with_name(path.name + ".torn")
    try:
        with open(torn, "ab") as fh:
            fh.write(fragment + b"\n")
    except OSError:
        pass  # the fragment is unusable anyway; keeping a copy is a courtesy
    os.ftruncate(fd, keep)
    log.warning("%s: removed a torn last line (%d bytes, an interrupted write; copy in %s)", path, len(fragment),
                torn.name)
    return len(fragment)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append_line(path: str | Path, line: str, *, fsync: bool = True) -> None:
    """Append ``line`` (a newline is added if missing) to ``path`` after repairing a torn tail.

    On an I/O error part-way through the write the file is cut back to where it was and the error is raised."""
    path = Path(path)
    data = (line if line.endswith("\n") else line + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _repair_tail(fd, path)
        before = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            if fsync:
                os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, before)
            except OSError:
                pass
            error = storage_error(path, exc)
            if error is exc:
                raise
            raise error from exc
    finally:
        os.close(fd)
