from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from policy_helpers import snapshot
from nlgrad.policy import (AddOp, PolicyFileError, PolicyMemory, PolicyStore, apply_update, default_policy_dir,
                           parse_policy_text)


def test_commit_writes_numbered_immutable_versions_and_manifest(store: PolicyStore):
    assert store.versions() == [1, 2, 3] and store.latest() == 3
    assert sorted(p.name for p in store.dir.iterdir()) == [".lock", "manifest.json", "v0001.json", "v0002.json",
                                                          "v0003.json"]
    manifest = json.loads(store.manifest_path.read_text())
    rows = [(v["version"], v["parent"], v["method"], v["n_ops"], v["scores"]) for v in manifest["versions"]]
    assert rows == [(1, None, "human", 0, {}), (2, 1, "nlgrad", 2, {"dev": 0.5}), (3, 2, "nlgrad", 2, {"dev": 0.6})]
    assert manifest["program"] == "twx_react" and store.manifest_is_current()
    v3 = store.load()
    assert v3.version == 3 and v3.parent == 2 and v3.created is not None
    assert v3.entries("twx.act")[-1].text == "Take the coin at once."
    text = store.version_path(3).read_text()
    assert text == v3.to_json() and text.endswith("}\n")


def test_load_dir_version_and_single_file(store: PolicyStore):
    assert PolicyMemory.load(store.dir).version == 3
    assert PolicyMemory.load(store.dir, version=1).version == 1
    assert PolicyMemory.load(store.version_path(2)).version == 2
    with pytest.raises(PolicyFileError, match="no such version"):
        PolicyMemory.load(store.dir, version=9)
    with pytest.raises(PolicyFileError, match="not the requested version"):
        PolicyMemory.load(store.version_path(2), version=3)
    with pytest.raises(PolicyFileError, match="no policy versions"):
        PolicyStore(store.dir.parent / "empty").load()


def test_reading_never_writes(store: PolicyStore):
    before = snapshot(store.dir)
    store.load(), store.manifest(), store.lineage(), store.rejected(), store.manifest_is_current()
    assert snapshot(store.dir) == before


def test_lineage_with_branches(store: PolicyStore):
    branch, _ = apply_update(store.load(2), [AddOp(route="twx.act", text="A different branch idea.")])
    assert store.commit(branch) == 4
    assert store.load(4).parent == 2
    assert store.lineage(4) == [4, 2, 1] and store.lineage() == [4, 2, 1] and store.lineage(3) == [3, 2, 1]
    # a loaded, hand-edited version is committed as a child of itself
    edited = store.load(3)
    edited.entries("twx.act")[0].text = "Edited by hand."
    assert store.commit(edited, method="human") == 5 and store.load(5).parent == 3
    # a fresh (uncommitted, parentless) memory becomes a child of the latest
    assert store.commit(store.load(1).model_copy(update={"version": 0, "parent": None})) == 6
    assert store.load(6).parent == 5


def test_explicit_parent_must_exist(store: PolicyStore):
    with pytest.raises(PolicyFileError, match="parent"):
        store.commit(store.load(), parent=42)
    assert store.commit(store.load(), parent=None) == 4 and store.load(4).parent is None


def test_other_program_is_refused(store: PolicyStore):
    other = parse_policy_text("schema_version: 1\nprogram: hotpot\nroutes: {}\n")
    with pytest.raises(PolicyFileError, match="another program"):
        store.commit(other)


def test_existing_version_is_never_overwritten(store: PolicyStore, monkeypatch):
    before = store.version_path(3).read_bytes()
    latest = store.load(3)
    monkeypatch.setattr(PolicyStore, "versions", lambda self: [1, 2])  # a stale view: the next number is taken
    with pytest.raises(PolicyFileError, match="refusing to overwrite"):
        store.commit(latest)
    assert store.version_path(3).read_bytes() == before


def _no_temp_files(directory: Path) -> bool:
    return not [p for p in directory.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("target", ["link", "fsync"])
def test_crash_while_writing_a_version_leaves_store_intact(store: PolicyStore, monkeypatch, target: str):
    before = snapshot(store.dir)
    candidate, _ = apply_update(store.load(), [AddOp(route="twx.act", text="Crash-test correction.")])

    def crash(*args, **kwargs):
        raise OSError("injected crash")

    monkeypatch.setattr(os, target, crash)
    with pytest.raises(OSError, match="injected crash"):
        store.commit(candidate)
    monkeypatch.undo()
    assert snapshot(store.dir) == before and _no_temp_files(store.dir)
    assert store.commit(candidate) == 4 and store.load().entries("twx.act")[-1].text == "Crash-test correction."
    assert store.manifest_is_current()


def test_crash_between_version_file_and_manifest_is_reconciled(store: PolicyStore, monkeypatch):
    old_manifest = store.manifest_path.read_bytes()
    candidate, _ = apply_update(store.load(), [AddOp(route="twx.act", text="Crash-test correction.")])

    def crash(*args, **kwargs):
        raise OSError("injected crash")

    monkeypatch.setattr(os, "replace", crash)  # the manifest is the only file written with os.replace
    with pytest.raises(OSError, match="injected crash"):
        store.commit(candidate, scores={"dev": 0.7})
    monkeypatch.undo()
    assert store.manifest_path.read_bytes() == old_manifest  # old manifest intact ...
    assert store.versions() == [1, 2, 3, 4]                  # ... the version file is complete ...
    assert not store.manifest_is_current()
    assert [v.version for v in store.manifest().versions] == [1, 2, 3, 4]  # ... and reconciled on read
    assert store.load().scores == {"dev": 0.7} and store.lineage() == [4, 3, 2, 1]
    assert store.repair() is True and store.manifest_is_current() and store.repair() is False
    assert store.commit(store.load()) == 5 and store.manifest_is_current()


def test_leftover_temp_file_and_torn_manifest_are_harmless(store: PolicyStore):
    (store.dir / ".v0004.json.abc123.tmp").write_text('{"schema_version": 1, "prog')
    store.manifest_path.write_text(store.manifest_path.read_text()[:50])
    assert store.versions() == [1, 2, 3] and store.load().version == 3
    with pytest.raises(PolicyFileError, match="manifest"):
        store.manifest_on_disk()
    assert not store.manifest_is_current()
    assert store.commit(store.load()) == 4 and store.manifest_is_current()


def test_version_number_inside_file_must_match_name(store: PolicyStore):
    data = json.loads(store.version_path(2).read_text())
    data["version"] = 7
    store.version_path(2).write_text(json.dumps(data))
    with pytest.raises(PolicyFileError) as info:
        store.load(2)
    assert info.value.field == "version" and info.value.value == 7 and "v0002.json" in str(info.value)


def test_rejected_updates_round_trip(store: PolicyStore):
    ops = [AddOp(route="twx.act", text="Bad idea."), {"op": "delete", "id": "twx.act#1"}]
    store.record_rejected(ops, "dev score dropped", scores={"dev": 0.4})
    store.record_rejected([{"op": "upvote", "id": "twx.act#2"}], "no gain")
    records = store.rejected()
    assert [r.reason for r in records] == ["dev score dropped", "no gain"]
    assert records[0].ops[0]["text"] == "Bad idea." and records[0].ops[1] == {"op": "delete", "id": "twx.act#1"}
    assert records[0].scores == {"dev": 0.4} and records[0].parent == 3


def test_rejected_torn_tail_is_repaired_and_wrong_records_raise(store: PolicyStore):
    store.record_rejected([], "first")
    with open(store.rejected_path, "ab") as fh:
        fh.write(b'{"created": "2024-01-01T00:00:00Z", "rea')  # crash mid-append
    assert [r.reason for r in store.rejected()] == ["first"]
    store.record_rejected([], "after the crash")  # the torn tail is cut off (kept in rejected.jsonl.torn) first
    assert [r.reason for r in store.rejected()] == ["first", "after the crash"]
    assert len(store.rejected_path.read_bytes().splitlines()) == 2
    with open(store.rejected_path, "ab") as fh:
        fh.write(b'{"reason": 3}\n')  # JSON, but not a rejected update: an error, not a torn write
    with pytest.raises(PolicyFileError) as info:
        store.rejected()
    assert "line 3" in info.value.field


def test_repair_of_an_empty_or_missing_dir_writes_nothing(tmp_path: Path):
    assert PolicyStore(tmp_path / "none").repair() is False and not (tmp_path / "none").exists()
    assert PolicyStore(tmp_path / "none").versions() == [] and PolicyStore(tmp_path / "none").rejected() == []


def test_default_policy_dir():
    assert default_policy_dir("twx_react", "twx/coin") == Path("policies/twx_react--twx-coin")
    assert default_policy_dir("p", root="/tmp/x") == Path("/tmp/x/p")


def test_version_files_are_readable(store: PolicyStore):
    assert store.version_path(1).stat().st_mode & 0o044 == 0o044
