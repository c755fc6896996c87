"""Small file helpers shared by every layer: atomic writes, tolerant JSON-lines reads, an inter-process lock, and the
marked block of a README that a measurement script rewrites."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator


STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})


def storage_error(path: Path, exc: OSError) -> OSError:
    """``exc`` as a :class:`StorageError` (a clean stop with one message) when it says the disk is full or failing;
    other OSErrors (FileExistsError, ...) are returned unchanged."""
    from nlgrad.errors import StorageError

    if exc.errno in STORAGE_ERRNOS and not isinstance(exc, StorageError):
        return StorageError(path, exc)
    return exc


def write_text_atomic(path: Path, text: str, *, overwrite: bool = True, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` via temp file + fsync + rename. With overwrite=False an existing file is an error.
    ``mode`` sets the new file's permission bits before the rename (default: the temp file's 0600).
    A full or failing disk raises StorageError and leaves the old file as it was."""
    path = Path(path)
    try:
        _write_text_atomic(path, text, overwrite=overwrite, mode=mode)
    except OSError as exc:
        error = storage_error(path, exc)
        if error is exc:
            raise
        raise error from exc


def _write_text_atomic(path: Path, text: str, *, overwrite: bool, mode: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails with FileExistsError instead of replacing
            os.unlink(tmp)
        fsync_dir(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json_atomic(path: Path, data: Any, *, overwrite: bool = True) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n",
                      overwrite=overwrite)


def _salvage(line: str) -> Any:
    """The record at the end of a line where a complete record was appended onto a torn fragment, else None."""
    start = line.find("{", 1)
    while start > 0:
        try:
            return json.loads(line[start:])
        except json.JSONDecodeError:
            start = line.find("{", start + 1)
    return None


_warned: set[tuple[str, int]] = set()


def read_jsonl(path: Path) -> Iterator[Any]:
    """The records of a JSON-lines file, in order. A line that does not parse (the torn fragment of a writer killed
    mid-write, a blank line) is skipped; a complete record glued onto such a fragment by an older writer is kept.
    Skipped fragments are reported once per file and size (a warning on the ``nlgrad.files`` logger)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    skipped = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            skipped += 1
            record = _salvage(line)
            if record is not None:
                yield record
    key = (str(path.resolve()), len(text))
    if skipped and key not in _warned:
        _warned.add(key)
        logging.getLogger("nlgrad.files").warning("%s: skipped %d torn line(s) left by an interrupted write",
                                                  path, skipped)


def fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock held on ``path`` (created if missing) for the duration of the block."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def replace_block(text: str, begin: str, end: str, body: str) -> str:
    """``text`` with everything between the ``begin`` and ``end`` marker lines replaced by ``body`` (the results
    tables that scripts maintain in READMEs); raises SystemExit naming the markers when either is missing."""
    if begin not in text or end not in text:
        raise SystemExit(f"the markers {begin} and {end} are missing")
    head, rest = text.split(begin, 1)
    return f"{head}{begin}\n{body}\n{end}{rest.split(end, 1)[1]}"
