"""Disk/IO: a run directory, policy store or LM cache on a read-only or full location is a clear error before any
work starts (no LM call), naming the setting and the path.

Real read-only and full file systems are small tmpfs mounts under pytest's tmp dir, unmounted afterwards (needs root
with CAP_SYS_ADMIN; skipped otherwise or when NLGRAD_TEST_NO_MOUNT is set). As root, ``chmod 0o500`` does not stop
writes, so permission-based read-only dirs are only tested as a non-root user. Portable variants that always run:
the path is under a regular file (ENOTDIR), and ENOSPC / EROFS injected into the write probe.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from reliability_helpers import toy_settings
from typer.testing import CliRunner

from nlgrad.errors import ConfigError, NlgradError
from nlgrad.evaluate import EvalRequest, run_eval
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize


@pytest.fixture
def tmpfs(tmp_path):
    """``tmpfs("name", read_only=..., full=...)`` mounts a 256 KiB tmpfs at tmp_path/name (unmounted afterwards)."""
    mounted: list[Path] = []

    def make(name: str, *, read_only: bool = False, full: bool = False) -> Path:
        if os.geteuid() != 0 or not shutil.which("mount") or os.environ.get("NLGRAD_TEST_NO_MOUNT"):
            pytest.skip("mounting a tmpfs needs root (and NLGRAD_TEST_NO_MOUNT unset)")
        path = tmp_path / name
        path.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k" + (",ro" if read_only else ""), "tmpfs",
                               str(path)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
        mounted.append(path)
        if full:
            fd = os.open(path / "filler", os.O_WRONLY | os.O_CREAT)
            try:
                while True:
                    os.write(fd, b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
            finally:
                os.close(fd)
        return path

    yield make
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _eval(tmp_path, server, **settings_update):
    settings = toy_settings(tmp_path, server.api_base).model_copy(update=settings_update)
    return run_eval(EvalRequest(benchmark="toy", split="dev", n=2), settings, progress=False)


LOCATIONS = ["read-only", "full"]


@pytest.mark.parametrize("kind", LOCATIONS)
def test_run_dir_on_bad_filesystem(toy, server, tmp_path, tmpfs, kind):
    root = tmpfs("fs", read_only=kind == "read-only", full=kind == "full")
    with pytest.raises(ConfigError, match="runs_dir") as info:
        _eval(tmp_path, server, runs_dir=root / "runs")
    assert str(root) in str(info.value)
    assert server.stats.requests == 0


@pytest.mark.parametrize("kind", LOCATIONS)
def test_policy_store_on_bad_filesystem(toy, server, tmp_path, tmpfs, kind):
    root = tmpfs("fs", read_only=kind == "read-only", full=kind == "full")
    config = OptimizeConfig(benchmark="toy", iterations=1, batch=2, val=2, test_n=0)
    with pytest.raises(ConfigError, match="--out") as info:
        run_optimize(config, toy_settings(tmp_path, server.api_base), root / "policy", progress=False)
    assert str(root) in str(info.value)
    assert server.stats.requests == 0


@pytest.mark.parametrize("kind", LOCATIONS)
def test_lm_cache_on_bad_filesystem(toy, server, tmp_path, tmpfs, kind):
    """A cache directory on a read-only or full filesystem is a clear error naming ``cache_dir``, before any LM
    request (not a raw OSError / sqlite3.OperationalError traceback from diskcache)."""
    root = tmpfs("fs", read_only=kind == "read-only", full=kind == "full")
    with pytest.raises(NlgradError, match="cache_dir") as info:
        _eval(tmp_path, server, cache_dir=root / "cache")
    assert str(root) in str(info.value)
    assert server.stats.requests == 0


# ---------------------------------------------------------------------------------------------- portable variants
def test_run_dir_under_a_file(toy, server, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match="runs_dir"):
        _eval(tmp_path, server, runs_dir=blocker / "runs")
    assert server.stats.requests == 0 and blocker.read_text() == "not a directory"


def test_policy_store_under_a_file_via_cli(toy, server, tmp_path):
    from reliability_helpers import write_toy_config

    from nlgrad.cli import app

    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    config = write_toy_config(tmp_path / "c.toml", server.api_base, cache_dir=tmp_path / "cache",
                              runs_dir=tmp_path / "runs")
    result = CliRunner().invoke(app, ["optimize", "--benchmark", "toy", "--out", str(blocker / "pol"), "--config",
                                      str(config), "--iterations", "1", "--batch", "2", "--val", "2"])
    assert result.exit_code == 2
    assert "--out" in result.output and str(blocker) in result.output
    assert server.stats.requests == 0


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_injected_write_errors_are_clear(toy, server, tmp_path, monkeypatch, code):
    real = Path.write_text

    def failing(self, *args, **kwargs):
        if self.name == ".write-probe":
            raise OSError(code, os.strerror(code), str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing)
    with pytest.raises(ConfigError, match=os.strerror(code)):
        _eval(tmp_path, server)
    config = OptimizeConfig(benchmark="toy", iterations=1, batch=2, val=2, test_n=0)
    with pytest.raises(ConfigError, match="--out"):
        run_optimize(config, toy_settings(tmp_path, server.api_base), tmp_path / "pol", progress=False)
    assert server.stats.requests == 0


def test_permission_read_only_dir_when_not_root(toy, server, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions; the tmpfs tests cover read-only locations")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="runs_dir"):
            _eval(tmp_path, server, runs_dir=locked / "runs")
    finally:
        locked.chmod(0o700)
