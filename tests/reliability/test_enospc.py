"""A disk that fills mid-run: ENOSPC injected at seeded points among the run's own fsyncs (results, rejected
updates, state, versions, manifest, gate files) stops ``optimize`` with one clear error (no traceback type other than
StorageError), leaves every file readable, and the same command, run again once "space is back", ends exactly like
an uninterrupted run. A failing cache write loses only the caching."""

from __future__ import annotations

import errno
import json
import os
import random
import stat

import pytest
from reliability_helpers import policy_versions, result_rows, toy_settings

from nlgrad.errors import StorageError
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize
from nlgrad.policy import PolicyStore
from nlgrad.runtime.rundir import RunDir

POINTS = 6  # injected faults per test run


def _config():
    return OptimizeConfig(benchmark="toy", iterations=2, batch=3, val=3, test_n=2, workers=1)


class FullDisk:
    """``os.fsync`` of a file fails with ENOSPC on its ``at``-th call (counting from 1); ``at=None`` only counts.
    Directory fsyncs (best effort by design) are not counted."""

    def __init__(self, monkeypatch, at: int | None):
        self.at, self.calls, self.fired = at, 0, False
        self._real = os.fsync
        monkeypatch.setattr(os, "fsync", self)

    def __call__(self, fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            return self._real(fd)
        self.calls += 1
        if self.calls == self.at:
            self.fired = True
            raise OSError(errno.ENOSPC, "No space left on device")
        return self._real(fd)


def _rejected(out):
    return [{k: v for k, v in r.model_dump(mode="json").items() if k != "created"}
            for r in PolicyStore(out).rejected()]


def _assert_readable(out):
    store = PolicyStore(out)
    store.manifest()
    store.rejected()
    for path in out.rglob("*"):
        assert not path.name.endswith(".tmp"), f"temp file left behind: {path}"
        if path.suffix == ".json" and path.is_file():
            json.loads(path.read_text())
        if path.name == "results.jsonl":
            RunDir(path.parent).load_results()
            for line in path.read_text().splitlines():
                json.loads(line)  # no fragment left by the failed append


def test_enospc_at_seeded_points_stops_cleanly_and_resumes(toy, server, tmp_path, monkeypatch):
    settings = toy_settings(tmp_path, server.api_base)
    counter = FullDisk(monkeypatch, at=None)
    reference = run_optimize(_config(), settings, tmp_path / "ref", progress=False)
    total = counter.calls
    assert total > 20
    points = sorted(random.Random(27).sample(range(1, total + 1), POINTS))
    stopped = 0
    for k in points:
        out = tmp_path / f"fault-{k}"
        disk = FullDisk(monkeypatch, at=k)
        try:
            run_optimize(_config(), settings, out, progress=False)
        except StorageError as exc:
            stopped += 1
            assert "No space left on device" in str(exc) and "run the same command again" in str(exc)
        assert disk.fired, k
        _assert_readable(out)
        FullDisk(monkeypatch, at=None)  # space is back
        outcome = run_optimize(_config(), settings, out, progress=False)
        assert policy_versions(out) == policy_versions(tmp_path / "ref"), k
        assert _rejected(out) == _rejected(tmp_path / "ref"), k
        assert outcome.test["final"]["scores"] == reference.test["final"]["scores"], k
        for results in (tmp_path / "ref" / "run").rglob("results.jsonl"):
            twin = out / "run" / results.relative_to(tmp_path / "ref" / "run")
            assert result_rows(twin.parent) == result_rows(results.parent), (k, twin)
    assert stopped == POINTS  # every fault landed in a write that must stop the run, and it did


def test_cache_write_failure_loses_only_the_caching(tmp_path, server, monkeypatch, caplog):
    import diskcache

    from nlgrad.lm.client import LM

    lm = LM(toy_settings(tmp_path, server.api_base))

    def full(self, *a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(diskcache.Cache, "set", full)
    reply = lm.complete("agent", [{"role": "user", "content": "say hi"}])
    again = lm.complete("agent", [{"role": "user", "content": "say hi"}])
    assert reply.text and again.text == reply.text
    assert "cannot be written" in caplog.text
    assert caplog.text.count("cannot be written") == 1
