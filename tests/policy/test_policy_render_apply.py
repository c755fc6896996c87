from __future__ import annotations

import pytest

from nlgrad.policy import (PolicyFileError, PolicyMemory, apply_block, apply_update, find_block,
                           inject_into_dspy, parse_policy_text, remove_block)
from nlgrad.policy.render_formats import render_json, render_markdown, render_text_all

BEGIN = "<!-- nlgrad:policy route=twx.act version=0 BEGIN -->"
END = "<!-- nlgrad:policy route=twx.act END -->"


def test_render_is_one_plain_line_per_active_entry(memory: PolicyMemory):
    assert memory.render("twx.act") == (
        "- When the room has no coin, if the coin is not in the room, move through an unexplored exit.\n"
        "- Open closed doors before leaving a room.")
    assert memory.render("twx.plan") == "- Write a one-line plan before the first action."
    assert memory.render("no.such.route") == ""


def test_render_order_utility_then_natural_id_and_skips_disabled():
    m = PolicyMemory(program="p", routes={"r": [{"id": f"r#{i}", "text": f"Entry {i}."} for i in (1, 2, 10, 3)]})
    assert [line[2:] for line in m.render("r").splitlines()] == ["Entry 1.", "Entry 2.", "Entry 3.", "Entry 10."]
    m, _ = apply_update(m, [{"op": "upvote", "id": "r#10"}, {"op": "downvote", "id": "r#1"}])
    assert m.render("r").splitlines()[0] == "- Entry 10." and m.render("r").splitlines()[-1] == "- Entry 1."
    m.entries("r")[0].status = "disabled"  # validated on assignment
    with pytest.raises(ValueError):
        m.entries("r")[0].status = "sleeping"
    assert "Entry 1." not in m.render("r") and m.routes() == ["r"]
    m2 = PolicyMemory(program="p", routes={"r": [{"text": "x", "status": "disabled"}]})
    assert m2.render("r") == ""


def test_render_keeps_acronyms_and_indents_multiline_sections():
    m = PolicyMemory(program="p", routes={"r": [
        {"text": "DSPy signatures are fixed.", "when": "editing"},
        {"text": "I must check.", "when": "unsure"},
        {"text": "Section title\nfirst line\n\nsecond line", "kind": "document_section"}]})
    assert m.render("r").splitlines() == [
        "- When editing, DSPy signatures are fixed.", "- When unsure, I must check.",
        "- Section title", "  first line", "", "  second line"]


def test_render_formats(memory: PolicyMemory):
    md = render_markdown(memory, "twx.act")
    assert md.startswith("### `twx.act` (policy v0)\n\n- When the room")
    assert "`twx.plan`" in render_markdown(memory)
    import json
    data = json.loads(render_json(memory, "twx.act"))
    assert data["text"] == memory.render("twx.act") and [e["id"] for e in data["entries"]] == ["twx.act#1", "twx.act#2"]
    assert set(json.loads(render_json(memory))["routes"]) == {"twx.act", "twx.plan"}
    assert render_text_all(memory).startswith("[twx.act]\n- When")


def test_apply_to_appends_block_keeping_text_byte_identical(memory: PolicyMemory):
    prompt = "You are an agent.\n\nAct well."
    out = memory.apply_to(prompt, "twx.act")
    assert out == prompt + "\n" + BEGIN + "\n" + memory.render("twx.act") + "\n" + END + "\n"
    assert memory.apply_to(out, "twx.act") == out
    assert memory.apply_to("", "twx.act").startswith(BEGIN)
    assert memory.apply_to("Ends with newline\n", "twx.act").startswith("Ends with newline\n" + BEGIN)


def test_apply_to_replaces_existing_block_in_place(memory: PolicyMemory):
    head, tail = "Header line\n", "\nFooter {{ jinja }} stays\r\n  exactly.\n"
    prompt = head + "<!-- nlgrad:policy route=twx.act version=1 BEGIN -->\nold stuff\n" + END + tail
    out = memory.apply_to(prompt, "twx.act")
    assert out.startswith(head) and out.endswith(tail)
    assert "old stuff" not in out and BEGIN in out
    assert memory.apply_to(out, "twx.act") == out
    other = memory.apply_to(out, "twx.plan")  # a second route gets its own block
    assert other.startswith(out) and memory.apply_to(other, "twx.act") == other


def test_apply_block_with_crlf_and_empty_body():
    text = "line one\r\nline two"
    out = apply_block(text, "r", "- a\n- b", 2)
    assert out == "line one\r\nline two\r\n<!-- nlgrad:policy route=r version=2 BEGIN -->\r\n- a\r\n- b\r\n" \
                  "<!-- nlgrad:policy route=r END -->\r\n"
    assert apply_block(out, "r", "- a\n- b", 2) == out
    empty = apply_block(out, "r", "", 3)
    assert "- a" not in empty and apply_block(empty, "r", "", 3) == empty
    assert remove_block(out, "r") == "line one\r\nline two\r\n"


def test_malformed_blocks_raise():
    one = apply_block("x\n", "r", "- a", 1)
    with pytest.raises(PolicyFileError, match="exactly one"):
        find_block(one + one, "r", source="deployed.txt")
    with pytest.raises(PolicyFileError, match="exactly one"):
        apply_block("<!-- nlgrad:policy route=r BEGIN -->\nno end\n", "r", "- a")
    with pytest.raises(PolicyFileError, match="before its BEGIN"):
        find_block("<!-- nlgrad:policy route=r END -->\n<!-- nlgrad:policy route=r BEGIN -->", "r")
    # a route whose name is a prefix of another is not confused with it
    assert find_block(apply_block("", "twx.actor", "- a"), "twx.act") is None


def test_inject_into_dspy_is_idempotent(memory: PolicyMemory):
    dspy = pytest.importorskip("dspy")

    class Agent(dspy.Module):
        def __init__(self):
            super().__init__()
            self.act = dspy.Predict("observation -> action")
            self.plan = dspy.Predict("task -> plan")
            self.other = dspy.Predict("a -> b")

    program = Agent()
    original = program.act.signature.instructions
    visited = inject_into_dspy(program, memory, {"act": "twx.act", "plan": "twx.plan"})
    assert visited == {"act": "twx.act", "plan": "twx.plan"}
    first = program.act.signature.instructions
    assert first.startswith(original) and memory.render("twx.act") in first
    assert "twx.plan" in program.plan.signature.instructions
    assert program.other.signature.instructions == dspy.Predict("a -> b").signature.instructions
    assert list(program.act.signature.input_fields) == ["observation"]
    inject_into_dspy(program, memory, {"act": "twx.act", "plan": "twx.plan"})
    assert program.act.signature.instructions == first
    newer, _ = apply_update(memory, [{"op": "add", "route": "twx.act", "text": "Never eat the coin."}])
    inject_into_dspy(program, newer, {"act": "twx.act"})
    assert program.act.signature.instructions.count("BEGIN") == 1
    assert "Never eat the coin." in program.act.signature.instructions
    empty = parse_policy_text("schema_version: 1\nprogram: p\nroutes: {}\n")
    inject_into_dspy(program, empty, {"act": "twx.act"})
    assert "BEGIN" not in program.act.signature.instructions
    # without a route map, predictor names are the routes
    named = PolicyMemory(program="p", routes={"act": [{"text": "Be brief."}]})
    assert inject_into_dspy(program, named)["act"] == "act"
    assert "Be brief." in program.act.signature.instructions
