"""Fuzzing: mangled policy files either load or raise one PolicyFileError naming the file; nothing is modified."""

from __future__ import annotations

import atexit
import copy
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_helpers import HUMAN_YAML, snapshot
from nlgrad.policy import (PolicyFileError, PolicyMemory, PolicyStore, apply_update, dump_policy_json,
                           parse_policy_text)

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


def _build_store() -> tuple[PolicyStore, bytes]:
    root = tempfile.mkdtemp(prefix="nlgrad-fuzz-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    store = PolicyStore(Path(root) / "pol")
    memory = parse_policy_text(HUMAN_YAML, source="human.yaml")
    store.commit(memory)
    v2, _ = apply_update(store.load(), [
        {"op": "add", "route": "twx.act", "text": "Take the coin.", "when": "you see a coin", "trace_ids": ["t1"]},
        {"op": "upvote", "id": "twx.act#1", "amount": 2}], provenance={"source": "nlgrad", "iteration": 1})
    store.commit(v2, scores={"dev": 0.5, "test": 0.25}, ops_count=2, note="fuzz base")
    return store, store.version_path(2).read_bytes()


STORE, VALID = _build_store()
VALID_DATA = json.loads(VALID)
TARGET = STORE.version_path(2)


def _check(content: bytes) -> None:
    TARGET.write_bytes(content)
    before = snapshot(STORE.dir)
    for load in (lambda: STORE.load(), lambda: PolicyMemory.load(TARGET), lambda: STORE.manifest()):
        try:
            result = load()
        except PolicyFileError as exc:
            assert str(TARGET) in str(exc)
            assert exc.field is not None
            assert len(str(exc)) < 2000
        else:
            if isinstance(result, PolicyMemory):  # anything that loads also round-trips
                assert parse_policy_text(dump_policy_json(result), source="x.json") == result
    assert snapshot(STORE.dir) == before


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append(prefix + (key,))
            out.extend(_paths(value, prefix + (key,)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.append(prefix + (i,))
            out.extend(_paths(value, prefix + (i,)))
    return out


ALL_PATHS = _paths(VALID_DATA)
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                 st.text(max_size=20), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


def _parent(data: Any, path: tuple) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


@FUZZ
@given(cut=st.integers(0, len(VALID) - 1))
def test_truncated_version_file(cut: int):
    _check(VALID[:cut])


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=4))
def test_byte_flips(flips: list[tuple[int, int]]):
    content = bytearray(VALID)
    for pos, byte in flips:
        content[pos] = byte
    _check(bytes(content))


@FUZZ
@given(path=st.sampled_from(ALL_PATHS))
def test_field_deletions(path: tuple):
    data = copy.deepcopy(VALID_DATA)
    parent = _parent(data, path)
    del parent[path[-1]]
    _check(json.dumps(data, indent=2, sort_keys=True).encode())


@FUZZ
@given(path=st.sampled_from(ALL_PATHS), value=JUNK)
def test_wrong_types(path: tuple, value: Any):
    data = copy.deepcopy(VALID_DATA)
    _parent(data, path)[path[-1]] = value
    _check(json.dumps(data, indent=2, sort_keys=True).encode())


@FUZZ
@given(data=st.data())
def test_mangled_hand_written_yaml(data):
    text = HUMAN_YAML
    if data.draw(st.booleans()):
        text = text[: data.draw(st.integers(0, len(text)))]
    else:
        chars = list(text)
        for _ in range(data.draw(st.integers(1, 4))):
            chars[data.draw(st.integers(0, len(chars) - 1))] = data.draw(st.sampled_from(list(":-[]{}'\"#&*!|> \n\tx1")))
        text = "".join(chars)
    try:
        parse_policy_text(text, source="human.yaml")
    except PolicyFileError as exc:
        assert "human.yaml" in str(exc) and exc.field is not None


def test_unmangled_base_still_loads():
    TARGET.write_bytes(VALID)
    assert STORE.load().version == 2 and STORE.load().note == "fuzz base"
