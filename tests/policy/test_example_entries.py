"""Entries of kind ``example`` (worked input -> output): text format, bounds, rendering, show, diff and the CLI."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from nlgrad.policy import AddOp, EntryKind, PolicyBounds, PolicyEntry, PolicyMemory, PolicyStore, apply_update
from nlgrad.policy.cli import policy_app
from nlgrad.policy.examples import elide_middle, format_example
from nlgrad.policy.schema import MAX_EXAMPLE_CHARS, MAX_EXAMPLES_PER_ROUTE

ROUTE = "qa.answer"
LOOSE = PolicyBounds(max_entries_per_route=20, max_tokens_per_route=10_000, max_ops_per_update=50,
                     max_edit_cost=100_000)


def empty() -> PolicyMemory:
    return PolicyMemory(program="qa", benchmark="qa")


def example(n: int, **kw) -> AddOp:
    return AddOp(route=ROUTE, kind=EntryKind.example, text=format_example({"question": f"What is {n}+{n}?"},
                                                                          str(2 * n)), **kw)


def test_format_example_one_field_several_fields_and_long_values():
    assert format_example({"text": "word number 3"}, "WORD NUMBER 3") == "Input: word number 3\nOutput: WORD NUMBER 3"
    text = format_example({"question": "Who?", "context": "line a\nline b"}, {"answer": "Paris"})
    assert text == ('Input:\n  question: Who?\n  context:\n    line a\n    line b\nOutput: {"answer": "Paris"}')
    assert elide_middle("x" * 50, 20) == "x" * 8 + " [...] " + "x" * 5
    huge = format_example({"a": "y" * 50_000, "b": "z" * 50_000}, "w" * 9000)
    assert len(huge) <= MAX_EXAMPLE_CHARS and " [...] " in huge


def test_render_line_introduces_an_example_and_indents_it():
    new, report = apply_update(empty(), [example(2), example(3, when="the question is arithmetic"),
                                         AddOp(route=ROUTE, text="Answer with a number.")], LOOSE)
    assert len(report.applied) == 3
    assert new.render(ROUTE).split("\n") == [
        "- Example:", "  Input: What is 2+2?", "  Output: 4",
        "- When the question is arithmetic, for example:", "  Input: What is 3+3?", "  Output: 6",
        "- Answer with a number."]


def test_an_example_text_is_bounded():
    with pytest.raises(ValidationError, match="example entry is limited"):
        PolicyEntry(text="x" * (MAX_EXAMPLE_CHARS + 1), kind=EntryKind.example)
    PolicyEntry(text="x" * (MAX_EXAMPLE_CHARS + 1))  # other kinds keep the general limit
    long = {"op": "add", "route": ROUTE, "kind": "example", "text": "x" * (MAX_EXAMPLE_CHARS + 1)}
    new, report = apply_update(empty(), [long], LOOSE)
    assert new.n_entries() == 0 and report.trimmed[0].rule == "invalid"
    one, _ = apply_update(empty(), [example(1)], LOOSE)
    (entry,) = one.active_entries(ROUTE)
    edited, report = apply_update(one, [{"op": "edit", "id": entry.id, "text": "y" * (MAX_EXAMPLE_CHARS + 1)}],
                                  LOOSE)
    assert report.trimmed[0].rule == "invalid" and edited.render(ROUTE) == one.render(ROUTE)


def test_examples_per_route_entries_and_tokens_stay_bounded():
    ops = [example(n) for n in range(MAX_EXAMPLES_PER_ROUTE + 2)]
    new, report = apply_update(empty(), ops, LOOSE)
    assert len(new.active_entries(ROUTE)) == MAX_EXAMPLES_PER_ROUTE
    assert [t.rule for t in report.trimmed] == ["max_examples_per_route"] * 2
    tight, report = apply_update(empty(), ops, PolicyBounds(max_entries_per_route=3, max_ops_per_update=50,
                                                            max_tokens_per_route=10_000, max_edit_cost=100_000))
    assert len(tight.active_entries(ROUTE)) == 3 and {t.rule for t in report.trimmed} == {"max_entries_per_route"}
    few, _ = apply_update(empty(), ops, PolicyBounds(max_tokens_per_route=40, max_ops_per_update=50,
                                                     max_edit_cost=100_000))
    assert 0 < few.tokens(ROUTE) <= 40


def test_examples_merge_only_when_identical_and_never_with_instructions():
    new, report = apply_update(empty(), [example(1), example(2), example(1)])  # default bounds: dedupe at 0.8
    assert len(new.active_entries(ROUTE)) == 2 and len(report.merged_duplicates) == 1
    assert new.active_entries(ROUTE)[0].support == 2
    instruction = AddOp(route=ROUTE, text=new.active_entries(ROUTE)[0].text)  # same words, other kind
    mixed, report = apply_update(new, [instruction], LOOSE)
    assert not report.merged_duplicates and len(mixed.active_entries(ROUTE)) == 3


def test_show_diff_and_render_commands(tmp_path):
    store = PolicyStore(tmp_path / "pol")
    store.commit(empty(), method="init")
    v2, _ = apply_update(store.load(), [example(4, trace_ids=["bfs-abc/qa/train/4"])],
                         provenance={"source": "bootstrap_fewshot", "iteration": 1})
    store.commit(v2)
    runner = CliRunner()

    def run(*args):
        result = runner.invoke(policy_app, [str(a) for a in args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    shown = run("show", store.dir)
    assert "[example]" in shown and "What is 4+4?" in shown and "bootstrap_fewshot" in shown
    assert "traces: bfs-abc/qa/train/4" in shown  # provenance: the rollout folder and the train task
    diff = run("diff", store.dir, "1", "2")
    assert f"+ {ROUTE}#1  Example:\n    Input: What is 4+4?\n    Output: 8" in diff
    data = json.loads(run("diff", store.dir, "1", "2", "--format", "json"))
    assert data["routes"][0]["added"][0]["kind"] == "example"
    assert run("render", store.dir, "--route", ROUTE) == "- Example:\n  Input: What is 4+4?\n  Output: 8\n"
