"""DMRL: skill document sections, edit -> operation mapping, paired A/B with DRPO ranking, pre-gated loop, hooks."""

from __future__ import annotations

import json

import pytest
from fake_lm import EchoProgram, UpperCaseBenchmark, agent_reply, install_fake_lm, serve_toy

from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.dmrl import (DMRL, CandidateEdit, EditorSample, SkillDocument, edit_to_op, parse_section,
                                 section_text)
from nlgrad.optimize import run_optimize
from nlgrad.policy import AddOp, DeleteOp, EditOp, PolicyMemory, PolicyStore

TEMPLATE = ("{% block system %}Repeat the text.{% if policy %}\nSkill document:\n{{ policy }}{% endif %}"
            "{% endblock %}{% block user %}{{ text }}{% endblock %}")


class DocBench(UpperCaseBenchmark):
    id, kind, default_program = "docshout", "static", "docshout"
    prefix, expected = "d", "expected upper case"


class DocProgram(EchoProgram):
    name = "docshout"
    routes = ["doc.say"]
    template = TEMPLATE


GOOD = {"section": "Style", "action": "add", "content": "Write the repeated text in UPPERCASE letters."}
USELESS = {"section": "Greeting", "action": "add", "content": "Keep the text short and friendly."}
COPIER = {"section": "Numbers", "action": "add", "content": "Always mention word number 7 first."}  # task 7 only


def world_reply(messages, edits) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if "skill document" in system and "ATOMIC" in system:
        return json.dumps({"edits": edits})
    return agent_reply(system, user)


@pytest.fixture
def doc_world(monkeypatch):
    state = {"edits": [GOOD, USELESS, {"section": "Nowhere", "action": "delete"}, GOOD, COPIER]}
    state["calls"] = install_fake_lm(monkeypatch, lambda messages: world_reply(messages, state["edits"]))
    serve_toy(monkeypatch, DocBench(), DocProgram)
    return state


def config(**kw):
    base = {"method": "dmrl", "benchmark": "docshout", "iterations": 1, "batch": 3, "val": 3, "test_n": 2,
            "method_options": {"group_size": 5, "embedder": "lexical", "editor_per_call": 5}}
    return OptimizeConfig(**{**base, **kw})


def memory_with_sections() -> PolicyMemory:
    return PolicyMemory.model_validate({"program": "docshout", "routes": {"doc.say": [
        {"text": "## Reading\nRead the whole text first.", "kind": "document_section"},
        {"text": "Untitled advice from a human.", "provenance": {"source": "human"}},
        {"text": "## Output\nReply with the text only.", "kind": "document_section",
         "provenance": {"source": "dmrl"}}]}})


def test_sections_parse_and_render_as_markdown():
    assert parse_section("## Exploring rooms\nOpen doors.\nLook around.", "x") == ("Exploring rooms",
                                                                                   "Open doors.\nLook around.")
    assert parse_section("No title here.", "doc.say#2") == ("doc.say#2", "No title here.")
    assert section_text(" Output  format ", "Reply briefly. ") == "## Output format\nReply briefly."
    doc = SkillDocument(memory_with_sections(), ["doc.say"])
    assert [s.title for s in doc.sections("doc.say")] == ["Reading", "doc.say#2", "Output"]
    assert doc.find("doc.say", "reading!").entry_id == "doc.say#1" and doc.find("doc.say", "Nope") is None
    assert doc.markdown("doc.say").startswith("## Reading\nRead the whole text first.\n\n## doc.say#2")
    assert "- ## Reading\n  Read the whole text first." in memory_with_sections().render("doc.say")


def test_edits_become_bounded_operations():
    doc = SkillDocument(memory_with_sections(), ["doc.say"])
    op, old, new, protected, why = edit_to_op(doc, CandidateEdit(**GOOD), "doc.say")
    assert isinstance(op, AddOp) and op.text == "## Style\nWrite the repeated text in UPPERCASE letters."
    assert op.kind.value == "document_section" and (old, protected, why) == ("", False, "")
    op, old, new, _, _ = edit_to_op(doc, CandidateEdit(section="Reading", action="add",
                                                       content="Then check the spelling."), "doc.say")
    assert isinstance(op, EditOp) and op.id == "doc.say#1"
    assert new == "Read the whole text first.\nThen check the spelling."
    op, old, new, _, _ = edit_to_op(doc, CandidateEdit(section="output", action="replace",
                                                       content="Reply with the text in capitals."), "doc.say")
    assert isinstance(op, EditOp) and op.text == "## Output\nReply with the text in capitals."
    assert old == "Reply with the text only."
    op, old, new, protected, _ = edit_to_op(doc, CandidateEdit(section="doc.say#2", action="remove"), "doc.say")
    assert isinstance(op, DeleteOp) and new == "" and protected  # human-written: DRPO location weight applies
    assert edit_to_op(doc, CandidateEdit(section="Nowhere", action="delete"), "doc.say")[0] is None
    assert edit_to_op(doc, CandidateEdit(section="Style", action="add", content="short"), "doc.say")[0] is None


def test_best_edit_is_ab_tested_ranked_and_pre_gated(settings, doc_world, tmp_path):
    outcome = run_optimize(config(), settings, tmp_path / "p", progress=False)
    store = PolicyStore(tmp_path / "p")
    assert store.versions() == [1, 2] and outcome.state.history[0].accepted
    final = store.load(2)
    (entry,) = final.active_entries("doc.say")
    assert entry.kind.value == "document_section" and entry.text.startswith("## Style\n")
    it = tmp_path / "p/run/iter-0001"
    gate = json.loads((it / "gate.json").read_text())
    assert gate["method"] == "dmrl" and gate["accept"] and gate["best"] == 0
    assert gate["candidate_mean"] == 1.0 and gate["current_mean"] == 0.0 and gate["wins"] == 3
    # R = [1, 0], R_0 = 0: median 0.5, MAD 0.5 -> group = 0.5 * 0.5 / 0.8413 = 0.297159; control = 0.5 * 1 / 0.1 = 5
    assert gate["candidates"][0]["group"] == pytest.approx(0.297159, abs=1e-6)
    assert gate["candidates"][0]["control"] == pytest.approx(5.0)
    assert gate["advantages"][0] > gate["advantages"][1]
    rows = [json.loads(line) for line in (it / "dmrl_edits.jsonl").read_text().splitlines()]
    assert sorted(r["status"] for r in rows) == ["duplicate", "invalid", "invalid", "tested", "tested"]
    assert any("instance details: 7" in r.get("reason", "") for r in rows)  # dropped before any A/B rollout
    tested = [r for r in rows if r["status"] == "tested"]
    assert all(r["schema"] == "nlgrad.dmrl_edit/1" and r["prompt"] and r["completion"] for r in tested)
    assert [r["accepted"] for r in tested] == [True, False] and tested[0]["reward"] == 1.0
    assert tested[0]["scores"] == [1.0, 1.0, 1.0] and tested[0]["control_scores"] == [0.0, 0.0, 0.0]
    assert not (it / "val-candidate").exists()  # the shared loop did not re-gate
    assert outcome.test["final"]["score"]["mean"] == 1.0


def test_useless_edits_are_rejected_and_shown_to_the_editor_next_time(settings, doc_world, tmp_path):
    doc_world["edits"] = [USELESS]
    outcome = run_optimize(config(iterations=2), settings, tmp_path / "p", progress=False)
    assert not any(r.accepted for r in outcome.state.history)
    store = PolicyStore(tmp_path / "p")
    assert store.versions() == [1] and len(store.rejected()) == 2
    assert "DRPO" in store.rejected()[0].reason or "mean paired difference" in store.rejected()[0].reason
    editor_prompts = [m[-1]["content"] for m in doc_world["calls"] if "ATOMIC" in m[0]["content"]]
    assert "did NOT help" not in editor_prompts[0] and "Keep the text short and friendly" in editor_prompts[-1]


class FixedEditor:
    """An EditorPolicy (e.g. what a trained editor would be): always proposes GOOD."""

    requests: list = []

    def __init__(self, lm=None):
        self.lm = lm

    def propose(self, request, n):
        FixedEditor.requests.append(request)
        return [EditorSample(CandidateEdit(**GOOD), [{"role": "user", "content": "custom"}])]


def test_ab_on_train_batch_and_a_custom_editor(settings, doc_world, tmp_path):
    FixedEditor.requests = []
    options = {"ab_split": "train", "editor": f"{__name__}:FixedEditor", "embedder": "lexical"}
    outcome = run_optimize(config(method_options=options), settings, tmp_path / "p", progress=False)
    assert outcome.state.history[0].accepted
    request = FixedEditor.requests[0]
    assert request.failures and "expected upper case" in request.failures[0]
    gate = json.loads((tmp_path / "p/run/iter-0001/gate.json").read_text())
    assert gate["ab_split"] == "train" and gate["wins"] == 3
    with pytest.raises(ValueError):
        DMRL(ab_split="test")


def test_a_new_section_takes_the_condition_of_the_failures_it_names():
    doc = SkillDocument(memory_with_sections(), ["doc.say"])
    asked = []

    def condition(route, cases):
        asked.append((route, cases))
        return ["json"]

    edit = CandidateEdit(section="Format", action="add", content="Wrap the whole reply in one JSON object.",
                         cases=["2", 4, "x"])
    assert edit.cases == [2, 4]
    op, *_ = edit_to_op(doc, edit, "doc.say", condition)
    assert isinstance(op, AddOp) and op.match == ["json"] and asked == [("doc.say", [2, 4])]
    op, *_ = edit_to_op(doc, CandidateEdit(section="Reading", action="add", content="Then check the spelling.",
                                           cases=[1, 2]), "doc.say", condition)
    assert isinstance(op, EditOp) and len(asked) == 1  # an edited section keeps its own condition
    assert CandidateEdit(section="S", action="add", content="x y z", cases=None).cases == []


def test_failure_condition_reads_the_named_failures_inputs_against_the_batch():
    from types import SimpleNamespace

    from nlgrad.methods.dmrl import _failure_condition

    class FakeTrace:
        def __init__(self, text):
            self.text = text

        def module_calls(self):
            return [{"route": "doc.say", "inputs": {"text": self.text}}]

    texts = {"a": "reply in json with keys", "b": "give json output please", "c": "write a poem",
             "d": "tell a story"}
    results = [SimpleNamespace(task_id=t, success=False, score=0.0) for t in texts]
    rollouts = SimpleNamespace(results=results, traces={t: FakeTrace(x) for t, x in texts.items()})
    condition = _failure_condition(results, rollouts)
    assert condition("doc.say", [1, 2]) == ["json"]
    assert condition("doc.say", [1]) == []  # one failure names one task, not a kind of task
    assert condition("doc.say", [9]) == [] and condition("other.route", [1, 2]) == []
