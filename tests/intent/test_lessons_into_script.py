"""scripts/lessons_into.py: a control policy holding a base policy's examples and another policy's lessons, word for
word, with the examples shown per call set; refuses a source without lessons and an existing --out."""

from __future__ import annotations

import pytest

from script_modules import load_script

from nlgrad.methods.example_bank import example_selection
from nlgrad.policy import EntryKind, PolicyMemory, PolicyStore
from nlgrad.policy.schema import PolicyEntry

ROUTE = "intent.classify"


def write_policy(path, examples: list[str], lessons: list[str] = ()):
    entries = [PolicyEntry(id=f"{ROUTE}#{i + 1}", kind=EntryKind.example, text=f"Input: {m}\nOutput: card_arrival")
               for i, m in enumerate(examples)]
    entries += [PolicyEntry(id=f"{ROUTE}#{len(entries) + i + 1}", kind=EntryKind.correction, text=t, when="a card")
                for i, t in enumerate(lessons)]
    memory = PolicyMemory(program="intent_classify", benchmark="banking77", routes={ROUTE: entries},
                          selection=example_selection(8, "lexical"))
    PolicyStore(path).commit(memory, method="test")
    return path


def test_the_control_gets_the_base_examples_and_the_same_lessons(tmp_path, capsys):
    script = load_script("lessons_into")
    learned = write_policy(tmp_path / "learned", [f"card {i}" for i in range(20)],
                           ["Reply with the label of the example that asks the same thing."])
    base = write_policy(tmp_path / "random", [f"random message {i}" for i in range(30)])
    script.main(["--lessons-of", str(learned), "--base", str(base), "--out", str(tmp_path / "ctrl"),
                 "--examples-k", "1"])
    store = PolicyStore(tmp_path / "ctrl")
    assert store.versions() == [1, 2] and store.manifest().versions[-1].method == "control"
    entries = store.load().active_entries(ROUTE)
    examples = [e.text for e in entries if e.kind == EntryKind.example]
    assert examples == [e.text for e in PolicyStore(base).load().active_entries(ROUTE)]  # all 30, unchanged
    (lesson,) = [e for e in entries if e.kind != EntryKind.example]
    assert lesson.text == "Reply with the label of the example that asks the same thing." and lesson.when == "a card"
    assert store.load().selection.k == 1 and PolicyStore(base).load().selection.k == 8
    assert "1 lesson(s)" in capsys.readouterr().out


def test_a_source_without_lessons_or_an_existing_out_is_refused(tmp_path):
    script = load_script("lessons_into")
    base = write_policy(tmp_path / "random", ["a b c"])
    with pytest.raises(SystemExit):
        script.main(["--lessons-of", str(base), "--base", str(base), "--out", str(tmp_path / "ctrl")])
    assert not (tmp_path / "ctrl").exists()
    with pytest.raises(SystemExit):
        script.main(["--lessons-of", str(base), "--base", str(base), "--out", str(base)])
