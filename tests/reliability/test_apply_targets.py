"""`nlgrad policy apply` on prompt files that are not plain writable files: a symlink (the deployed prompt is often a
link into a release folder), a file that cannot be written (immutable, read-only, a read-only disk). The deployed
prompt must end up with the new block, or the command must fail with one line naming the file and the reason; it
never reports "applied" unless the file reads back with the new content."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nlgrad.cli import app

ROUTE = "hotpot.answer"
PROMPT = "You answer questions.\n"


def _policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"schema_version": 1, "program": "hotpot_multihop", "benchmark": "hotpotqa",
                                "routes": {ROUTE: [{"text": "Answer with the shortest span."}]}}))
    return path


def _apply(policy: Path, prompt_file: Path, *extra: str):
    return CliRunner().invoke(app, ["policy", "apply", str(policy), "--route", ROUTE, "--prompt-file",
                                    str(prompt_file), *extra])


def _assert_one_line_error(result, *words: str) -> None:
    assert result.exit_code not in (0, None), result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # no traceback
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert "applied policy" not in result.output and "Traceback" not in result.output
    for word in words:
        assert word in "".join(result.output.split()), (word, result.output)


# ---------------------------------------------------------------------------------------------- symlinks
@pytest.mark.parametrize("hops", [1, 2])
def test_apply_through_a_symlink_updates_the_target_and_keeps_the_link(tmp_path, hops):
    release = tmp_path / "release"
    release.mkdir()
    real = release / "prompt.txt"
    real.write_text(PROMPT)
    real.chmod(0o640)
    link = real
    for i in range(hops):  # deploy/current.txt -> (deploy/mid.txt ->) ../release/prompt.txt, relative links
        (tmp_path / "deploy").mkdir(exist_ok=True)
        new = tmp_path / "deploy" / f"link{i}.txt"
        new.symlink_to(os.path.relpath(link, new.parent))
        link = new
    before = os.readlink(link)
    result = _apply(_policy(tmp_path), link)
    assert result.exit_code == 0, result.output
    assert "applied" in result.output and str(real) in "".join(result.output.split())
    assert link.is_symlink() and os.readlink(link) == before  # the link is kept, pointing where it pointed
    text = real.read_text()
    assert text.startswith(PROMPT) and "Answer with the shortest span." in text
    assert link.read_text() == text
    assert oct(real.stat().st_mode & 0o777) == oct(0o640)
    assert sorted(p.name for p in release.iterdir()) == ["prompt.txt"]  # no temp file left beside the target
    assert _apply(_policy(tmp_path), link, "--check").exit_code == 0


def test_apply_through_a_dangling_symlink_is_one_clear_line(tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "gone.txt")
    _assert_one_line_error(_apply(_policy(tmp_path), link), "link.txt", "cannotread")
    assert link.is_symlink() and not (tmp_path / "gone.txt").exists()


def test_apply_never_says_applied_when_the_file_does_not_read_back(tmp_path, monkeypatch):
    """A write that reports success but leaves the old content (a filesystem or tool that silently drops it)."""
    import nlgrad.policy.deploy as deploy

    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PROMPT)
    monkeypatch.setattr(deploy, "write_text_atomic", lambda path, text, **kw: None)
    result = _apply(_policy(tmp_path), prompt)
    _assert_one_line_error(result, "prompt.txt", "doesnotreadback")
    assert prompt.read_text() == PROMPT


# ---------------------------------------------------------------------------------------------- unwritable targets
@pytest.mark.parametrize("code, where", [(errno.EPERM, "replace"), (errno.EACCES, "mkstemp"),
                                         (errno.EROFS, "mkstemp")])
def test_apply_to_an_unwritable_file_is_one_line_naming_it(tmp_path, monkeypatch, code, where):
    """EPERM on the rename is what an immutable file (chattr +i) gives; EACCES a folder the user may not write;
    EROFS a read-only mount. Each is one line naming the file and the reason, exit code 2, and the file unchanged."""
    import tempfile

    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PROMPT)

    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os if where == "replace" else tempfile, where, refuse)
    result = _apply(_policy(tmp_path), prompt)
    _assert_one_line_error(result, "prompt.txt", "".join(os.strerror(code).split()))
    assert result.exit_code == 2
    assert "freespace" not in "".join(result.output.split())  # not the run-resume advice of a full disk
    assert prompt.read_text() == PROMPT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.json", "prompt.txt"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("chattr"), reason="chattr +i needs root")
def test_apply_to_an_immutable_file_is_one_line_naming_it(tmp_path):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PROMPT)
    if subprocess.run(["chattr", "+i", str(prompt)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem has no immutable attribute")
    try:
        result = _apply(_policy(tmp_path), prompt)
    finally:
        subprocess.run(["chattr", "-i", str(prompt)], check=True)
    _assert_one_line_error(result, "prompt.txt", "notwritable", "Operationnotpermitted")
    assert prompt.read_text() == PROMPT


def test_apply_to_a_read_only_file_is_refused(tmp_path, monkeypatch):
    """A read-only prompt file (mode 0444) is refused rather than replaced behind its permissions (the rename alone
    would succeed in a writable folder). Root may write any file, so there the EACCES a user gets is simulated."""
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PROMPT)
    prompt.chmod(0o444)
    if os.geteuid() == 0:
        real_open = os.open

        def user_open(path, flags, *args, **kwargs):
            if Path(path) == prompt and flags & (os.O_WRONLY | os.O_RDWR):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", user_open)
    result = _apply(_policy(tmp_path), prompt)
    _assert_one_line_error(result, "prompt.txt", "notwritable", "Permissiondenied")
    assert prompt.read_text() == PROMPT
