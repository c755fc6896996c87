"""Team programs: researcher -> answerer on HotpotQA and planner + actor on TWX; message edges in the trace graph."""

from __future__ import annotations

import re
import shutil

import pytest
from fake_lm import install_fake_lm

from nlgrad.credit.team import agent_routes, team_structure
from nlgrad.programs.team_hotpot import ANSWERER, RESEARCHER, TeamHotpotProgram, parse_research
from nlgrad.programs.team_twx import ACTOR, PLANNER, TeamTWXProgram, parse_plan
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import MetricResult, Observation, StepResult, Task

pytest.importorskip("rank_bm25")


def team_reply(messages) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if "researcher of a two-person team" in system:
        return "Facts: The Tower was designed by Anna Berg.\nNext search: Anna Berg architect birthplace"
    if "answerer of a two-person team" in system:
        return "Oslo"
    if "planner of a two-agent team" in system:
        return "Plan: go east and take the coin."
    if "actor of a two-agent team" in system:
        numbers = dict((text, n) for n, text in re.findall(r"^(\d+)\. (.+?)(?: \(already|$)", user, re.M))
        return numbers.get("take coin") or numbers.get("move east") or "1"
    return "?"


@pytest.fixture
def fake_lm(monkeypatch):
    return install_fake_lm(monkeypatch, team_reply)


def hotpot_task() -> Task:
    context = [{"title": "The Tower", "sentences": ["The Tower is a building designed by Anna Berg.", " It is tall."]},
               {"title": "Anna Berg", "sentences": ["Anna Berg is an architect born in Oslo."]},
               {"title": "Bread", "sentences": ["Bread is baked food."]},
               {"title": "Rivers", "sentences": ["Rivers flow to the sea."]}]
    return Task(id="hq/1", split="dev", inputs={"question": "Where was the designer of The Tower born?",
                                                "context": context}, gold={"answer": "Oslo"})


class AnswerBench:
    id, kind, default_program = "hq", "static", "team_hotpot"

    def metric(self, task, output, episode=None):
        ok = output["answer"] == task.gold["answer"]
        return MetricResult(score=float(ok), success=ok, feedback="ok" if ok else "wrong")


def test_research_replies_parse_robustly():
    assert parse_research("Facts: A is B.\nNext search: B town", {}) == {"notes": "A is B.", "query": "B town"}
    assert parse_research("- fact: x y z\nQuery: \"k w\"", {}) == {"notes": "x y z", "query": "k w"}
    assert parse_research("Just some notes about Oslo.", {}) == {"notes": "Just some notes about Oslo.",
                                                                  "query": "Just some notes about Oslo"}
    assert parse_research("", {}) == {"notes": "", "query": ""}
    assert parse_plan("Plan: \"open the door\"\nmore", {}) == "open the door" and parse_plan("", {}) == ""


def test_hotpot_team_passes_the_researcher_message_to_the_answerer(make_lm, fake_lm):
    program = TeamHotpotProgram()
    assert program.routes == [RESEARCHER, ANSWERER] and agent_routes(program) == {"researcher": [RESEARCHER],
                                                                                    "answerer": [ANSWERER]}
    result = Executor(benchmark=AnswerBench(), program=program, lm=make_lm(), progress=False,
                      keep_traces=True).run([hotpot_task()])
    (r,) = result.results
    assert r.error is None and r.success and r.output["notes"].startswith("The Tower was designed")
    assert "Anna Berg" in r.output["titles"] and r.output["queries"][1] == "Anna Berg architect birthplace"
    trace = result.traces["hq/1"]
    (research,) = trace.module_calls(RESEARCHER)
    (answer,) = trace.module_calls(ANSWERER)
    assert research["id"] in trace.parents(answer["id"])  # the message edge researcher -> answerer
    assert "Researcher's notes: The Tower was designed by Anna Berg." in answer["messages"][-1]["content"]
    structure = team_structure(trace, program.agents)
    assert [(s["name"], s["position"].split(":")[0]) for s in structure] == [("researcher", "first responder"),
                                                                             ("answerer", "final responder")]


def test_hotpot_team_runs_on_real_hotpotqa_tasks(make_lm, fake_lm):
    from nlgrad.errors import BenchmarkError
    from nlgrad.runtime.registry import load_benchmark

    try:
        bench = load_benchmark("hotpotqa")
        tasks = bench.tasks("dev", 2)
    except BenchmarkError as exc:
        pytest.skip(f"hotpotqa data not available: {exc}")
    result = Executor(benchmark=bench, program=TeamHotpotProgram(bench), lm=make_lm(), progress=False).run(tasks)
    assert [r.error for r in result.results] == [None, None]
    assert all(len(r.output["titles"]) == 4 and "Gold answer" in r.feedback for r in result.results)


class CoinEnv:
    """Kitchen -> (move east) -> hall with a coin. Taking the coin wins."""

    def reset(self, task):
        self.room = "kitchen"
        return self._obs("You are in the kitchen. There is an exit to the east.")

    def _obs(self, text):
        actions = ["look around", "move east"] if self.room == "kitchen" else ["move west", "take coin", "look around"]
        return Observation(text, actions, info={"task": "Find the coin and take it.", "room": self.room,
                                                "state_key": self.room})

    def step(self, action):
        if action == "move east":
            self.room = "hall"
            return StepResult(self._obs("You are in the hall. You see a coin."))
        if action == "take coin":
            return StepResult(self._obs("You take the coin."), reward=1, done=True, score=1.0, success=True)
        return StepResult(self._obs(f"You {action}. Nothing happens."))

    def close(self):
        pass


class CoinBench:
    id, kind, default_program, default_step_cap = "coin", "interactive", "team_twx", 10

    def make_env(self):
        return CoinEnv()

    def metric(self, task, output, episode=None):
        return MetricResult(score=float(episode.success), success=episode.success, feedback="done")


def test_twx_team_takes_turns_with_message_edges_both_ways(make_lm, fake_lm):
    program = TeamTWXProgram(plan_every=1)
    result = Executor(benchmark=CoinBench(), program=program, lm=make_lm(), step_cap=6, progress=False,
                      keep_traces=True).run([Task(id="c/1", split="dev", seed=1)])
    (r,) = result.results
    assert r.error is None and r.success and r.output["actions"] == ["move east", "take coin"]
    assert r.output["plans"] == ["go east and take the coin."] * 2
    trace = result.traces["c/1"]
    plans, acts = trace.module_calls(PLANNER), trace.module_calls(ACTOR)
    assert len(plans) == 2 and len(acts) == 2
    assert plans[0]["id"] in trace.parents(acts[0]["id"])  # planner -> actor
    assert acts[0]["id"] in trace.parents(plans[1]["id"])  # actor -> planner (the next turn)
    assert plans[1]["id"] in trace.parents(acts[1]["id"])
    assert "Planner's plan: go east" in acts[0]["messages"][-1]["content"]
    assert "Actor's recent actions: move east" in plans[1]["messages"][-1]["content"]
    structure = team_structure(trace, program.agents)
    assert [s["name"] for s in structure] == ["planner", "actor"] and structure[1]["receives"] == ["planner"]


def test_twx_team_replans_every_few_turns(make_lm, fake_lm):
    result = Executor(benchmark=CoinBench(), program=TeamTWXProgram(plan_every=4), lm=make_lm(), step_cap=6,
                      progress=False, keep_traces=True).run([Task(id="c/2", split="dev", seed=2)])
    trace = result.traces["c/2"]
    assert len(trace.module_calls(PLANNER)) == 1 and len(trace.module_calls(ACTOR)) == 2


@pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java")
def test_twx_team_runs_real_cooking_episodes(make_lm, fake_lm):
    pytest.importorskip("textworld_express")
    from nlgrad.runtime.registry import load_benchmark

    bench = load_benchmark("twx/cooking")
    result = Executor(benchmark=bench, program=TeamTWXProgram(bench), lm=make_lm(), step_cap=5, progress=False,
                      keep_traces=True).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None and 1 <= r.steps <= 5
    trace = result.traces[r.task_id]
    assert trace.module_calls(PLANNER) and len(trace.module_calls(ACTOR)) == r.steps


@pytest.mark.parametrize("family, team", [("twx", TeamTWXProgram), ("hotpotqa", TeamHotpotProgram)])
def test_human_policy_advises_every_agent_of_the_team_program(family, team):
    from nlgrad.benchmarks.qa_metrics import human_policy_path
    from nlgrad.evaluate import check_policy_routes
    from nlgrad.policy import PolicyMemory

    human = PolicyMemory.load(human_policy_path(family))
    program = team()
    check_policy_routes(human, program, "human")
    assert all(human.active_entries(route) for route in program.routes)


def test_a_policy_for_other_routes_is_refused_with_the_routes_named():
    from nlgrad.errors import ConfigError
    from nlgrad.evaluate import check_policy_routes
    from nlgrad.policy import PolicyMemory

    single = PolicyMemory.model_validate({"program": "twx_react", "routes": {"twx.act": [{"text": "Open doors."}]}})
    with pytest.raises(ConfigError, match="twx.act.*team_twx.planner") as err:
        check_policy_routes(single, TeamTWXProgram(), "policies/x")
    assert err.value.field == "--policy" and "policies/x" in str(err.value)
    check_policy_routes(PolicyMemory(program="twx_react"), TeamTWXProgram(), "empty")  # empty: nothing to refuse
