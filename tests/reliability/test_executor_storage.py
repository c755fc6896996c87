"""A disk that fills while the executor records a task: ENOSPC from the ``results.jsonl`` append, or from a file a task
writes itself, stops the run at once with one StorageError (no further task is started, no error result is saved for
it) and a resume, once space is back, ends exactly like a run that never failed. Before, the failing append let the
whole batch run on for nothing (its results were never written), and a StorageError inside a task was saved as a
score-0 error result, which ``--keep-errors`` never retries."""

from __future__ import annotations

import errno

import pytest
import reliability_world as world
from reliability_helpers import result_rows, toy_settings

import nlgrad.journal as journal
from nlgrad.errors import StorageError
from nlgrad.lm.client import LM
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.rundir import RunDir

N = 6


class UpperPolicy:
    def render(self, route):
        return "Write the repeated text in UPPERCASE."


class DiskProgram(world.ToyProgram):
    """The toy program; a task in ``full`` fails writing its scratch file as a full disk would."""

    full: set[str] = set()

    def run(self, task, ctx):
        if task.id in self.full:
            raise OSError(errno.ENOSPC, "No space left on device", "scratch.txt")
        return super().run(task, ctx)


def _run(tmp_path, server, name, *, cache, resume=False, retry_errors=True):
    lm = LM(toy_settings(tmp_path, server.api_base, cache=cache))
    bench = world.ToyBenchmark()
    executor = Executor(benchmark=bench, program=DiskProgram(), lm=lm, policy=UpperPolicy(), workers=1,
                        run_dir=RunDir(tmp_path / name, retry_errors=retry_errors).create(), progress=False)
    return executor.run(bench.tasks("dev", N), resume=resume)


@pytest.fixture
def slow_server():
    """Each reply takes 0.2 s, far longer than recording a result, so the worker cannot run many tasks ahead of the
    failing append (the bound below then holds on a loaded machine too)."""
    with world.FakeOpenAIServer(latency_s=0.2) as srv:
        yield srv


def test_enospc_on_result_append_stops_the_run_and_resumes(slow_server, tmp_path, monkeypatch):
    server = slow_server
    clean = _run(tmp_path, server, "clean", cache="cache-clean")
    assert clean.summary["errors"] == 0 and clean.summary["n"] == N
    per_task = server.stats.requests / N

    calls = {"n": 0}
    real = journal._write_all

    def full_on_second(fd, data):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(journal, "_write_all", full_on_second)
    before = server.stats.requests
    with pytest.raises(StorageError, match="No space left on device.*run the same command again"):
        _run(tmp_path, server, "faulty", cache="cache-faulty")
    tasks_run = (server.stats.requests - before) / per_task
    assert tasks_run <= 3, f"{tasks_run:.0f} of {N} tasks ran after the disk filled at the 2nd result"
    lines = (tmp_path / "faulty/results.jsonl").read_text().splitlines()
    assert len(lines) == 1, lines  # the first result; the failed append left no fragment

    monkeypatch.setattr(journal, "_write_all", real)  # space is back
    resumed = _run(tmp_path, server, "faulty", cache="cache-faulty", resume=True)
    assert resumed.summary["errors"] == 0 and resumed.summary["n"] == N
    assert result_rows(tmp_path / "faulty") == result_rows(tmp_path / "clean")


def test_storage_error_inside_a_task_is_not_saved_as_its_result(server, tmp_path, monkeypatch):
    _run(tmp_path, server, "clean", cache="cache-clean")
    bad = world.ToyBenchmark().tasks("dev", N)[1].id
    monkeypatch.setattr(DiskProgram, "full", {bad})
    with pytest.raises(StorageError, match=f"task {bad}.*No space left on device"):
        _run(tmp_path, server, "faulty", cache="cache-faulty", retry_errors=False)
    saved = RunDir(tmp_path / "faulty").load_results(include_errors=True)
    assert bad not in saved, f"the full disk was saved as the task's result: {saved.get(bad)}"
    assert not any(r["error"] for r in saved.values())

    monkeypatch.setattr(DiskProgram, "full", set())  # space is back; --keep-errors would not retry an error result
    resumed = _run(tmp_path, server, "faulty", cache="cache-faulty", resume=True, retry_errors=False)
    assert resumed.summary["errors"] == 0 and resumed.summary["n"] == N
    assert result_rows(tmp_path / "faulty") == result_rows(tmp_path / "clean")
