"""LangMARL: central credit parsing, role context from the trace graph, per-agent aggregation, and a toy team run."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from fake_lm import UpperCaseBenchmark, install_fake_lm, serve_toy

from nlgrad.credit.team import TeamCredit, agent_routes, match_credits, message_view, team_structure
from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.langmarl import LangMARL
from nlgrad.optimize import run_optimize
from nlgrad.policy import PolicyStore
from nlgrad.runtime.executor import TaskResult
from nlgrad.runtime.module import Module
from nlgrad.runtime.trace import Trace

WRITER_T = ("{% block system %}You are the writer. Copy the text.{% if policy %}\nLessons:\n{{ policy }}{% endif %}"
            "{% endblock %}{% block user %}{{ text }}{% endblock %}")
SHOUTER_T = ("{% block system %}You are the shouter. Repeat the draft.{% if policy %}\nLessons:\n{{ policy }}"
             "{% endif %}{% endblock %}{% block user %}Draft: {{ draft }}{% endblock %}")
ROUTES = {"writer": ["team.write"], "shouter": ["team.shout"]}


class TeamShoutBenchmark(UpperCaseBenchmark):
    """Gold is the input in upper case: the writer copies, the shouter must shout (when its policy says so)."""

    id, kind, default_program = "teamshout", "static", "teamshout"
    prefix = "ts"


class TeamShoutProgram:
    name = "teamshout"
    agents = ROUTES

    def __init__(self, benchmark=None):
        self.write = Module("team.write", WRITER_T)
        self.shout = Module("team.shout", SHOUTER_T)

    @property
    def routes(self):
        return ["team.write", "team.shout"]

    def run(self, task, ctx):
        draft = ctx.call(self.write, text=task.inputs["text"])
        return ctx.call(self.shout, draft=draft).value


def team_reply(messages) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if "central critic" in system:
        return json.dumps({"summary": "the shouter kept lower case", "agents": [
            {"agent": "writer", "contribution": 0.5, "what_worked": "copied the text", "what_to_improve": ""},
            {"agent": "shouter", "contribution": -1, "what_worked": "", "what_to_improve": "it did not shout",
             "policy_suggestion": "Write the repeated text in UPPERCASE"}]})
    if "ONE evaluation" in system:
        return json.dumps({"summary": "not shouted", "what_worked": "", "what_to_improve": "the text was not upper "
                           "case", "policy_suggestion": "Write the repeated text in UPPERCASE"})
    if "improve one agent" in system:
        agent = re.search(r"Agent: (\w+)", user).group(1)
        return json.dumps({"note": f"As the {agent}, always write the repeated text in UPPERCASE letters.",
                           "when": "", "replaces": ""})
    if "merge improvement notes" in system:
        n = len(re.findall(r"^\d+\. ", user, re.M))
        note = re.search(r"^1\. (.*)$", user, re.M).group(1)
        return json.dumps({"lessons": [{"text": note, "when": "", "sources": list(range(1, n + 1))},
                                       {"text": "Add a friendly greeting to the text.", "sources": [1]}]})
    if "UPPERCASE" in system and "shouter" in system:
        return user.removeprefix("Draft: ").upper()
    return user.removeprefix("Draft: ")


@pytest.fixture
def team_world(monkeypatch):
    calls = install_fake_lm(monkeypatch, team_reply)
    serve_toy(monkeypatch, TeamShoutBenchmark(), TeamShoutProgram)
    return calls


def chain_trace() -> Trace:
    """input -> researcher -> tool -> answerer (with a message edge researcher -> answerer) -> output."""
    t = Trace(task_id="t1")
    i = t.add_node("input", "task", inputs={"q": "?"})
    r = t.add_node("module", "r.research", parents=[i], messages=[{"role": "user", "content": "find"}],
                   output="notes")
    tool = t.add_node("tool", "retrieve", parents=[r])
    a = t.add_node("module", "r.answer", parents=[tool, r], messages=[{"role": "user", "content": "answer"}],
                   output="42")
    t.add_node("output", "task.output", parents=[a])
    return t


ROLES3 = {"planner": ["p.plan"], "critic": ["p.check"], "actor": ["p.act"]}


def test_role_context_comes_from_the_graph_not_from_declaration_order():
    # the program declares answerer first; the trace says the researcher acts first
    routes = {"answerer": ["r.answer"], "researcher": ["r.research"]}
    structure = team_structure(chain_trace(), routes)
    assert [s["name"] for s in structure] == ["researcher", "answerer"]
    assert structure[0]["position"].startswith("first responder")
    assert structure[1]["position"].startswith("final responder") and structure[1]["receives"] == ["researcher"]
    t = Trace(task_id="t2")
    prev = t.add_node("input", "task")
    for route in ["p.plan", "p.check", "p.act", "p.plan", "p.act"]:  # turn-taking: first calls decide the order
        prev = t.add_node("module", route, parents=[prev], output=route)
    structure = team_structure(t, ROLES3)
    assert [s["position"].split(":")[0] for s in structure] == ["first responder", "intermediate responder",
                                                                 "final responder"]
    assert team_structure(chain_trace(), {"solo": ["r.answer"]})[0]["position"].startswith("sole responder")
    view = message_view(chain_trace(), routes)
    assert [(m["agent"], m["said"]) for m in view] == [("researcher", "notes"), ("answerer", "42")]


def test_programs_without_agents_count_each_route_as_an_agent():
    prog = SimpleNamespace(routes=["a.x", "a.y"])
    assert agent_routes(prog) == {"a.x": ["a.x"], "a.y": ["a.y"]}
    assert agent_routes(TeamShoutProgram()) == ROUTES


def test_well_formed_credit_and_mapping_form_parse():
    reply = TeamCredit.model_validate({"summary": "s", "agents": [
        {"agent": "Researcher", "contribution": "0.7", "what_worked": "found it", "what_to_improve": "",
         "policy_suggestion": "Search for the bridge entity"},
        {"agent": "answerer", "contribution": "negative", "what_to_improve": "copy the span"}]})
    credits, missing, unknown = match_credits(reply, ["researcher", "answerer"], {})
    assert missing == [] and unknown == []
    assert credits["researcher"].contribution == 0.7 and credits["researcher"].agent == "researcher"
    assert credits["answerer"].contribution == -0.5
    mapping = TeamCredit.model_validate({"agents": {"r.answer": {"contribution": 9, "what_to_improve": "x"}}})
    credits, missing, _ = match_credits(mapping, ["researcher", "answerer"],
                                        {"researcher": ["r.research"], "answerer": ["r.answer"]})
    assert credits["answerer"].contribution == 1.0 and missing == ["researcher"]  # route names identify agents


def _result(success=False):
    return TaskResult(task_id="t1", split="train", seed=None, score=float(success), success=success,
                      feedback="wrong answer")


def test_missing_agent_is_reported_and_unknown_names_ignored(make_lm, script):
    script([json.dumps({"summary": "s", "agents": [{"agent": "answerer", "contribution": -1,
                                                    "what_to_improve": "copy the span"},
                                                   {"agent": "narrator", "contribution": 1}]})])
    method = LangMARL()
    record = method.credit(SimpleNamespace(lm=make_lm()), chain_trace(), _result(),
                           {"researcher": ["r.research"], "answerer": ["r.answer"]})
    assert set(record["credits"]) == {"answerer"} and record["missing"] == ["researcher"]
    assert record["unknown"] == ["narrator"]


def test_malformed_credit_is_reasked_once_then_skipped(make_lm, script):
    rec = script(["not json", '{"agents": "still wrong"}'])
    method = LangMARL()
    record = method.credit(SimpleNamespace(lm=make_lm()), chain_trace(), _result(),
                           {"researcher": ["r.research"], "answerer": ["r.answer"]})
    assert len(rec.calls) == 2 and "could not be used" in rec.calls[1]["messages"][-1]["content"]
    assert record["credits"] == {} and "re-ask" in record["skipped"] and len(method.skipped) == 1


def test_malformed_then_fixed_credit_is_used(make_lm, script):
    script(["oops", json.dumps({"agents": [{"agent": "researcher", "what_to_improve": "query the bridge"}]})])
    record = LangMARL().credit(SimpleNamespace(lm=make_lm()), chain_trace(), _result(),
                               {"researcher": ["r.research"], "answerer": ["r.answer"]})
    assert set(record["credits"]) == {"researcher"} and record["missing"] == ["answerer"]


def config(**kw):
    base = {"method": "langmarl", "benchmark": "teamshout", "iterations": 1, "batch": 3, "val": 3, "test_n": 2}
    return OptimizeConfig(**{**base, **kw})


def test_toy_team_learns_per_agent_lesson_through_the_shared_loop(settings, team_world, tmp_path):
    outcome = run_optimize(config(), settings, tmp_path / "p", progress=False)
    store = PolicyStore(tmp_path / "p")
    assert store.versions() == [1, 2] and outcome.state.history[0].accepted
    final = store.load(2)
    assert "UPPERCASE" in final.render("team.shout") and final.render("team.write") == ""  # credit went to shouter
    assert "greeting" not in final.render("team.shout")  # a one-off note was dropped by aggregation
    entry = final.active_entries("team.shout")[0]
    assert entry.provenance.source == "langmarl" and len(entry.provenance.trace_ids) == 3
    it = tmp_path / "p/run/iter-0001"
    credits = json.loads((it / "credits.json").read_text())
    assert credits["mode"] == "central_credit" and len(credits["records"]) == 3
    assert credits["records"][0]["structure"][0]["position"].startswith("first responder")
    notes = json.loads((it / "notes.json").read_text())
    assert notes["writer"] == [] and len(notes["shouter"]) == 3
    assert outcome.test["final"]["score"]["mean"] == 1.0 and outcome.test["initial"]["score"]["mean"] == 0.0


def test_global_credit_ablation_gives_every_agent_the_shared_evaluation(settings, team_world, tmp_path, monkeypatch):
    from nlgrad.methods import CATALOG

    monkeypatch.setitem(CATALOG, "langmarl_global", "nlgrad.methods.langmarl:LangMARLGlobal")
    run_optimize(config(method="langmarl_global"), settings, tmp_path / "g", progress=False)
    it = tmp_path / "g/run/iter-0001"
    records = json.loads((it / "credits.json").read_text())["records"]
    assert all(r["credits"]["writer"]["what_to_improve"] == r["credits"]["shouter"]["what_to_improve"]
               for r in records)
    notes = json.loads((it / "notes.json").read_text())
    assert len(notes["writer"]) == 3 and len(notes["shouter"]) == 3  # no agent-level distinction
    final = PolicyStore(tmp_path / "g").load()
    assert "UPPERCASE" in final.render("team.write") and "UPPERCASE" in final.render("team.shout")


def _versions(path):
    store = PolicyStore(path)
    return [store.load(v).model_dump(mode="json", exclude={"created"}) for v in store.versions()]


def test_resume_after_stop_matches_uninterrupted_run_from_cache(settings, team_world, tmp_path):
    run_optimize(config(iterations=2), settings, tmp_path / "a", progress=False)
    calls = len(team_world)
    run_optimize(config(iterations=2), settings, tmp_path / "b", progress=False, stop_after=1)
    outcome = run_optimize(config(iterations=2), settings, tmp_path / "b", progress=False)
    assert outcome.state.completed == 2 and outcome.state.finished
    assert len(team_world) == calls  # the whole second run was served by the LM cache
    assert _versions(tmp_path / "a") == _versions(tmp_path / "b")


def test_unknown_credit_mode_is_refused():
    with pytest.raises(ValueError, match="credit_mode"):
        LangMARL(credit_mode="per_step")
