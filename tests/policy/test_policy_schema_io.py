from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlgrad.policy import (SCHEMA_VERSION, EntryKind, PolicyFileError, PolicyMemory, dump_policy_json,
                           load_policy_file, parse_policy_text)


def test_hand_written_yaml_fills_ids_and_defaults(memory: PolicyMemory):
    assert memory.schema_version == SCHEMA_VERSION
    assert memory.program == "twx_react" and memory.benchmark == "twx/coin"
    assert memory.method == "human" and memory.version == 0 and memory.parent is None
    assert [e.id for e in memory.entries("twx.act")] == ["twx.act#1", "twx.act#2"]
    assert memory.entries("twx.plan")[0].kind is EntryKind.rule
    first = memory.entries("twx.act")[0]
    assert (first.helpful, first.harmful, first.support, first.status.value) == (0, 0, 1, "active")
    assert memory.last_ids == {"twx.act": 2, "twx.plan": 1}
    assert memory.routes() == ["twx.act", "twx.plan"]


def test_filling_ids_is_deterministic_and_skips_taken_ids():
    text = """schema_version: 1
program: p
routes:
  r:
    - text: a
    - id: "r#1"
      text: b
    - text: c
"""
    a, b = parse_policy_text(text, source="x.yaml"), parse_policy_text(text, source="x.yaml")
    assert [e.id for e in a.entries("r")] == ["r#2", "r#1", "r#3"]
    assert a == b


def test_json_round_trip_is_canonical(memory: PolicyMemory, tmp_path: Path):
    text = dump_policy_json(memory)
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert "routes" in data and "by_route" not in data
    path = tmp_path / "copy.json"
    memory.save(path)
    again = load_policy_file(path)
    assert again == memory
    assert dump_policy_json(again) == text
    # one entry per block: each entry's text sits on its own line
    assert sum('"text":' in line for line in text.splitlines()) == 3


def test_save_refuses_to_overwrite(memory: PolicyMemory, tmp_path: Path):
    path = memory.save(tmp_path / "m.json")
    with pytest.raises(FileExistsError):
        memory.save(path)
    memory.save(path, overwrite=True)


def test_when_is_normalised():
    m = parse_policy_text('{"schema_version": 1, "program": "p", "routes": {"r": [{"text": "x", "when": " When  the door is closed, "}, {"text": "y", "when": ""}]}}')
    assert [e.when for e in m.entries("r")] == ["the door is closed", None]


def _err(tmp_path: Path, name: str, content: str | bytes) -> PolicyFileError:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = path.read_bytes()
    with pytest.raises(PolicyFileError) as info:
        load_policy_file(path)
    assert path.read_bytes() == before
    assert str(path) in str(info.value)
    return info.value


def test_truncated_json_names_file_line_and_value(tmp_path: Path, memory: PolicyMemory):
    text = dump_policy_json(memory)
    err = _err(tmp_path, "v.json", text[: len(text) // 2])
    assert "not valid JSON" in str(err) and err.field.startswith("line ")


def test_invalid_yaml(tmp_path: Path):
    err = _err(tmp_path, "h.yaml", "schema_version: 1\nprogram: [unclosed\n")
    assert "not valid YAML" in str(err) and "line" in err.field


def test_unknown_schema_version(tmp_path: Path):
    err = _err(tmp_path, "h.yaml", "schema_version: 7\nprogram: p\nroutes: {}\n")
    assert err.field == "schema_version" and err.value == 7 and "unknown schema version" in str(err)


def test_missing_schema_version(tmp_path: Path):
    err = _err(tmp_path, "h.yaml", "program: p\n")
    assert err.field == "schema_version" and "missing" in str(err)


def test_bad_field_names_dotted_path_and_value(tmp_path: Path):
    err = _err(tmp_path, "h.yaml", "schema_version: 1\nprogram: p\nroutes:\n  twx.act:\n    - text: 42\n")
    assert err.field == "routes.twx.act.0.text" and err.value == 42
    assert "field: routes.twx.act.0.text" in str(err) and "value: 42" in str(err)


def test_negative_counter_and_unknown_key(tmp_path: Path):
    err = _err(tmp_path, "a.yaml", "schema_version: 1\nprogram: p\nroutes:\n  r:\n    - text: t\n      helpful: -3\n")
    assert err.field == "routes.r.0.helpful" and err.value == -3
    err = _err(tmp_path, "b.yaml", "schema_version: 1\nprogram: p\nroutes:\n  r:\n    - text: t\n      txet: oops\n")
    assert err.field == "routes.r.0.txet" and err.value == "oops"


def test_duplicate_ids(tmp_path: Path):
    err = _err(tmp_path, "d.yaml",
               "schema_version: 1\nprogram: p\nroutes:\n  r:\n    - {id: 'r#1', text: a}\n    - {id: 'r#1', text: b}\n")
    assert err.field == "routes.r.1.id" and err.value == "r#1" and "duplicate" in str(err)


def test_bad_route_name_empty_text_and_other_roots(tmp_path: Path):
    err = _err(tmp_path, "r.yaml", "schema_version: 1\nprogram: p\nroutes:\n  'bad route':\n    - text: a\n")
    assert err.field.startswith("routes.bad route")
    err = _err(tmp_path, "t.yaml", "schema_version: 1\nprogram: p\nroutes:\n  r:\n    - text: '   '\n")
    assert err.field == "routes.r.0.text"
    assert _err(tmp_path, "e.yaml", "").field == "<file>"
    assert _err(tmp_path, "l.json", "[1, 2]").field == "<root>"
    assert _err(tmp_path, "u.json", b'{"schema_version": 1, "program": "\xff\xfe"}').field.startswith("byte ")


def test_long_values_are_truncated_in_messages(tmp_path: Path):
    err = _err(tmp_path, "long.yaml", "schema_version: 1\nprogram: p\ncreated: '" + "x" * 5000 + "'\n")
    assert err.field == "created" and len(str(err)) < 600 and "more chars" in str(err)


def test_missing_file_is_a_policy_file_error(tmp_path: Path):
    with pytest.raises(PolicyFileError, match="no such policy file"):
        PolicyMemory.load(tmp_path / "nope.json")
