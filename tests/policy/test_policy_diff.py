from __future__ import annotations

import json

from nlgrad.policy import PolicyMemory, PolicyStore, diff_files, diff_markup, diff_memories, diff_versions
from nlgrad.policy.tokens import word_ops

OLD = PolicyMemory(program="p", version=1, routes={
    "a": [{"id": "a#1", "text": "Take the coin when you see it."},
          {"id": "a#2", "text": "Open doors.", "when": "a door is closed"},
          {"id": "a#3", "text": "Gone soon."}],
    "b": [{"id": "b#1", "text": "Unchanged."}]})
NEW = PolicyMemory(program="p", version=2, routes={
    "a": [{"id": "a#1", "text": "Take the gold coin as soon as you see it.", "helpful": 2},
          {"id": "a#2", "text": "Open doors.", "when": "any door is closed", "status": "disabled"},
          {"id": "a#4", "text": "Brand new."}],
    "b": [{"id": "b#1", "text": "Unchanged."}]})


def test_word_ops():
    assert word_ops("Take the coin when you see it.", "Take the gold coin as soon as you see it.") == [
        {"op": "equal", "text": "Take the"}, {"op": "insert", "text": "gold"}, {"op": "equal", "text": "coin"},
        {"op": "delete", "text": "when"}, {"op": "insert", "text": "as soon as"},
        {"op": "equal", "text": "you see it."}]
    assert word_ops(None, "new words") == [{"op": "insert", "text": "new words"}]


def test_diff_known_pair_json():
    d = diff_memories(OLD, NEW)
    assert (d.old_label, d.new_label) == ("v1", "v2") and not d.empty
    assert [r.route for r in d.routes] == ["a"]
    (ra,) = d.routes
    assert [e.id for e in ra.added] == ["a#4"] and [e.id for e in ra.removed] == ["a#3"]
    assert [(e.id, e.fields) for e in ra.edited] == [("a#1", ["text"]), ("a#2", ["when", "status"])]
    assert ra.edited[1].when_ops == [{"op": "delete", "text": "a"}, {"op": "insert", "text": "any"},
                                     {"op": "equal", "text": "door is closed"}]
    assert ra.edited[1].text_ops == []
    assert [(c.id, c.changes) for c in ra.counters] == [("a#1", {"helpful": (0, 2)})]
    data = json.loads(d.to_json())
    assert data["routes"][0]["edited"][0]["text_ops"][1] == {"op": "insert", "text": "gold"}
    assert data["routes"][0]["added"][0]["text"] == "Brand new."


def test_diff_markup_known_pair():
    text = diff_markup(diff_memories(OLD, NEW))
    assert "[green]+ a#4  Brand new.[/green]" in text
    assert "[red]- a#3  Gone soon.[/red]" in text
    assert ("text: Take the [green bold]{+gold+}[/green bold] coin [red strike]\\[-when-][/red strike] "
            "[green bold]{+as soon as+}[/green bold] you see it.") in text
    assert "status: active -> disabled" in text and "= a#1  helpful 0->2" in text


def test_identical_policies_have_empty_diff():
    d = diff_memories(OLD, OLD)
    assert d.empty and d.routes == [] and "no changes" in diff_markup(d)


def test_diff_versions_and_files(store: PolicyStore, tmp_path):
    d = diff_versions(store.dir, 1, 3)
    (ra,) = [r for r in d.routes if r.route == "twx.act"]
    assert [e.id for e in ra.added] == ["twx.act#3"]
    (rp,) = [r for r in d.routes if r.route == "twx.plan"]
    assert [e.id for e in rp.removed] == ["twx.plan#1"]
    d2 = diff_versions(store.dir, 2, 3)
    assert [(e.id, e.fields) for r in d2.routes for e in r.edited] == [("twx.act#3", ["text"])]
    f = diff_files(store.version_path(2), store.version_path(3))
    assert f.routes == d2.routes and f.new_label.endswith("v0003.json")
    yaml_file = tmp_path / "human.yaml"
    yaml_file.write_text("schema_version: 1\nprogram: twx_react\nroutes:\n  twx.act:\n    - text: Hi.\n")
    assert diff_files(yaml_file, store.dir).routes
