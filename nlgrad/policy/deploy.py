"""Writing a deployed prompt file (``nlgrad policy apply``): through symlinks, atomically, and verified.

A deployed prompt is often a symlink (``current.txt -> releases/42/prompt.txt``). Replacing the link by a plain file
would leave the file the service reads unchanged, so the new text goes to the file at the end of the link chain
(temp file beside it, fsync, rename), with that file's permission bits, and the link stays as it was. A file whose
permissions forbid writing is refused rather than replaced behind them. Any failure is one :class:`PolicyFileError`
naming the file and the reason; success means the file, read back through the path the user gave, holds the new
text.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from nlgrad.files import write_text_atomic
from nlgrad.policy.errors import PolicyFileError


def _reason(exc: OSError) -> str:
    return os.strerror(exc.errno) if exc.errno else str(exc)


def _shown(path: Path, target: Path) -> str:
    return f"{path} -> {target}" if path.is_symlink() else str(path)


def prompt_target(path: Path) -> Path:
    """The file that ``path`` names: ``path`` itself, or the end of its chain of symlinks."""
    try:
        target = Path(path).resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (before Python 3.13)
        reason = _reason(exc) if isinstance(exc, OSError) else "a symlink loop"
        raise PolicyFileError(f"cannot read the prompt file: {reason}", path=path, field="<file>",
                              has_value=False) from None
    if not target.is_file():
        raise PolicyFileError("the prompt file is not a regular file", path=_shown(Path(path), target),
                              field="<file>", has_value=False)
    return target


def _check_writable(target: Path, shown: str) -> None:
    """Refuse a file that could not be written in place (read-only permissions, immutable, a read-only mount), even
    though the atomic rename might replace it anyway: opened for writing without truncation, nothing changes."""
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_APPEND))
    except OSError as exc:
        raise PolicyFileError(f"the prompt file is not writable: {_reason(exc)}; it was left unchanged", path=shown,
                              field="<file>", has_value=False) from None


def write_prompt_file(path: Path, text: str) -> Path:
    """Replace the content of the prompt file ``path`` (or of the file its symlinks lead to) with ``text``; returns
    the file written. Raises :class:`PolicyFileError` when it cannot be written or does not read back as ``text``."""
    path = Path(path)
    target = prompt_target(path)
    shown = _shown(path, target)
    _check_writable(target, shown)
    try:
        write_text_atomic(target, text, overwrite=True, mode=stat.S_IMODE(target.stat().st_mode))
    except OSError as exc:
        hint = ""
        if exc.errno in (errno.EACCES, errno.EPERM):
            hint = f" (the file is replaced atomically: {target.parent} must be writable and the file not immutable)"
        raise PolicyFileError(f"cannot write the prompt file: {_reason(exc)}{hint}; it was left unchanged",
                              path=shown, field="<file>", has_value=False) from None
    try:
        written = path.read_bytes()
    except OSError as exc:
        raise PolicyFileError(f"cannot read the prompt file back after writing it: {_reason(exc)}", path=shown,
                              field="<file>", has_value=False) from None
    if written != text.encode("utf-8"):
        raise PolicyFileError("the prompt file does not read back with the new policy block after writing it "
                              "(something else changed or replaced it)", path=shown, field="<file>",
                              has_value=False)
    return target
