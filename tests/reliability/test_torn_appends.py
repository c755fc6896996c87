"""Torn appends: a writer killed mid-append leaves a last line without its newline. Every append-only file
(rejected.jsonl, the usage journal ledger.jsonl, results.jsonl) must stay readable and lose no later record."""

from __future__ import annotations

import errno
import json
import logging
import os

import pytest

from nlgrad.files import read_jsonl
from nlgrad.lm.ledger import Ledger
from nlgrad.policy import PolicyMemory, PolicyStore
from nlgrad.runtime.rundir import RunDir

TORN = b'{"created": "2024-01-01T00:00:00Z", "parent": 1, "reason": "gate rej'


def _store(tmp_path) -> PolicyStore:
    store = PolicyStore(tmp_path / "p")
    store.commit(PolicyMemory(program="toy", benchmark="toy", method="init"), method="init")
    return store


def _lines_all_parse(path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("tears", [1, 3])
def test_rejected_survives_torn_last_line(tmp_path, caplog, tears):
    store = _store(tmp_path)
    store.record_rejected([], "first", scores={"iteration": 1})
    for n in range(tears):  # a crash mid-append, then the next run appends (possibly several times over)
        with open(store.rejected_path, "ab") as fh:
            fh.write(TORN)
        with caplog.at_level(logging.WARNING):
            store.record_rejected([], f"after tear {n}", scores={"iteration": n + 2})
        assert "torn last line" in caplog.text
    reasons = [r.reason for r in store.rejected()]  # no PolicyFileError on the now-middle fragment
    assert reasons == ["first"] + [f"after tear {n}" for n in range(tears)]
    assert len(_lines_all_parse(store.rejected_path)) == tears + 1  # the file itself is clean again
    assert store.rejected_path.with_name("rejected.jsonl.torn").read_bytes().count(TORN) == tears


def test_rejected_reads_a_fragment_left_mid_file_by_an_older_writer(tmp_path, caplog):
    store = _store(tmp_path)
    store.record_rejected([], "first")
    with open(store.rejected_path, "ab") as fh:
        fh.write(TORN + b"\n")  # what the previous writer did: newline, then the next record
    store.record_rejected([], "second")
    with caplog.at_level(logging.WARNING):
        assert [r.reason for r in store.rejected()] == ["first", "second"]
    assert "skipped 1 torn line" in caplog.text


def test_rejected_still_rejects_a_record_of_the_wrong_shape(tmp_path):
    from nlgrad.policy.errors import PolicyFileError

    store = _store(tmp_path)
    store.rejected_path.write_text('{"reason": 3}\n')
    with pytest.raises(PolicyFileError, match="rejected-update record"):
        store.rejected()


def test_usage_journal_keeps_the_call_after_a_torn_line(tmp_path):
    journal = tmp_path / "ledger.jsonl"
    Ledger(journal=journal).record("agent", cached=False, prompt_tokens=10, completion_tokens=5)
    with open(journal, "ab") as fh:
        fh.write(b'{"agent": {"cached": 0, "calls": 1, "comp')  # the killed process's half-written call
    Ledger(journal=journal).record("critic", cached=False, prompt_tokens=7, completion_tokens=3)
    replayed = Ledger.replay(journal)
    assert replayed.roles["agent"].calls == 1
    assert replayed.roles["critic"].calls == 1  # not glued onto the fragment and lost
    assert replayed.roles["critic"].prompt_tokens == 7
    assert len(_lines_all_parse(journal)) == 2


def test_glued_journal_line_from_an_older_writer_is_salvaged(tmp_path):
    journal = tmp_path / "ledger.jsonl"
    whole = json.dumps({"critic": {"calls": 1, "cached": 0, "prompt_tokens": 7, "completion_tokens": 3,
                                   "cost_usd": 0.0, "wall_s": 0.0, "retries": 0, "errors": 0}})
    journal.write_text('{"agent": {"calls": 1, "comp' + whole + "\n")
    assert Ledger.replay(journal).roles["critic"].prompt_tokens == 7


def test_results_file_is_clean_after_a_torn_line(tmp_path):
    run = RunDir(tmp_path / "run").create()
    row = {"split": "dev", "seed": 0, "success": True}
    run.append_result({"task_id": "t1", "score": 1.0, **row})
    with open(run.path / "results.jsonl", "ab") as fh:
        fh.write(b'{"task_id": "t2", "sco')
    run.append_result({"task_id": "t3", "score": 0.5, **row})
    assert sorted(run.load_results()) == ["t1", "t3"]
    assert [r["task_id"] for r in _lines_all_parse(run.path / "results.jsonl")] == ["t1", "t3"]


def test_failed_append_leaves_no_fragment(tmp_path, monkeypatch):
    """ENOSPC after part of a line was written: the file is cut back, the error propagates, later appends work."""
    from nlgrad.journal import append_line

    path = tmp_path / "x.jsonl"
    append_line(path, '{"a": 1}')
    real_write = os.write

    def half_then_full(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError) as info:
        append_line(path, '{"b": 2, "padding": "' + "x" * 100 + '"}')
    assert info.value.errno == errno.ENOSPC
    monkeypatch.setattr(os, "write", real_write)
    assert path.read_text() == '{"a": 1}\n'
    append_line(path, '{"c": 3}')
    assert list(read_jsonl(path)) == [{"a": 1}, {"c": 3}]
