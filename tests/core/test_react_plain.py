"""The plain ReAct program (``react_plain``): the environment's actions as given, the model's choice played as
matched, no ranking, hiding, loop breaker or confirmation; beside it the scaffolded program on the same games."""

from __future__ import annotations

import shutil

import pytest

from nlgrad.programs.react_plain import ReActPlainProgram, parse_plain
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import MetricResult, Observation, StepResult, Task
from nlgrad.runtime.registry import load_benchmark, load_program

needs_twx = [pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java"),
             pytest.mark.skipif(__import__("importlib").util.find_spec("textworld_express") is None,
                                reason="textworld-express is not installed")]


@pytest.mark.parametrize("reply, expected", [
    ("2", ("take coin", "number")), ("take coin", ("take coin", "text")), ("move est", ("move east", "fuzzy")),
    ("9", ("9", "as written")), ("dance wildly\nand more", ("dance wildly", "as written")), ("", ("", "as written")),
])
def test_a_reply_is_played_as_matched_or_as_written(reply, expected):
    parsed = parse_plain(reply, {"actions": ["move east", "take coin", "open door to west"]})
    assert (parsed["action"], parsed["match"]) == expected


def test_a_free_text_reply_passes_through_where_the_environment_parses_free_text():
    inputs = {"actions": ["focus on red box", "go to outside"], "free_verbs": ["focus", "go", "pick"]}
    assert parse_plain("pick up baby beaver", inputs) == {"index": None, "action": "pick up baby beaver",
                                                          "match": "free"}
    assert parse_plain("2", inputs)["action"] == "go to outside"


class CorridorEnv:
    """A corridor of rooms; the valid actions come in a fixed, non-alphabetical order; 'take coin' in room 2 wins."""

    ORDER = ["wait", "move east", "look around", "take coin", "examine wall"]

    def reset(self, task):
        self.room, self.moves = 0, 0
        return self._obs("You are in room 0.")

    def _obs(self, text):
        return Observation(text, list(self.ORDER), info={"task": "Take the coin in room 2.",
                                                         "state_key": str(self.room), "look": text})

    def step(self, action):
        if action == "move east":
            self.room += 1
            return StepResult(self._obs(f"You are in room {self.room}."))
        if action == "take coin" and self.room == 2:
            return StepResult(self._obs("You take the coin."), reward=1, done=True, score=1.0, success=True)
        return StepResult(self._obs(f"Nothing happens after {action!r}."))

    def close(self):
        pass


class CorridorBench:
    id, kind, default_program, default_step_cap = "corridor", "interactive", "react_plain", 10

    def tasks(self, split, n=None):
        return [Task(id=f"corridor/{split}/0", split=split, seed=0)]

    def make_env(self):
        return CorridorEnv()

    def metric(self, task, output, episode=None):
        return MetricResult(score=float(episode.success), success=episode.success, feedback="done")


def _run(program, script, make_lm, replies, step_cap=5):
    recorder = script(replies)
    bench = CorridorBench()
    result = Executor(benchmark=bench, program=program, lm=make_lm(), step_cap=step_cap, progress=False,
                      keep_traces=True).run(bench.tasks("dev"))
    (r,) = result.results
    assert r.error is None, r.error
    return r, result.traces[r.task_id], recorder


def test_the_plain_program_plays_each_choice_as_matched_with_no_override(script, make_lm):
    # "1" is "wait" in the environment's order, every time: played each time (no loop breaker, no ranking)
    r, trace, recorder = _run(ReActPlainProgram(), script, make_lm, ["1"] * 3, step_cap=3)
    assert r.output["actions"] == ["wait"] * 3 and not r.success
    assert not any(n.get("override") for n in trace.nodes(kind="module"))
    prompt = recorder.calls[0]["messages"][-1]["content"]
    assert "1. wait\n2. move east\n3. look around\n4. take coin\n5. examine wall" in prompt  # as given
    assert "already tried" not in recorder.calls[-1]["messages"][-1]["content"]
    r, trace, _ = _run(ReActPlainProgram(), script, make_lm, ["2", "move east", "take the coin"])
    assert r.output["actions"] == ["move east", "move east", "take coin"] and r.success
    r, trace, _ = _run(ReActPlainProgram(), script, make_lm, ["%%%", "7"], step_cap=2)
    assert r.output["actions"] == ["%%%", "7"] and r.output["unmatched"] == 2  # the environment says what came of it
    steps = [n for n in trace.nodes(kind="env") if n["route"] == "env.step"]
    assert "Nothing happens after '%%%'" in steps[0]["observation"]


def test_the_scaffolded_program_on_the_same_replies_ranks_and_overrides(script, make_lm):
    # the contrast: the scaffolded program sorts and ranks the list (the task's words first) and breaks loops
    r, trace, recorder = _run(load_program("twx_scaffolded"), script, make_lm, ["1"] * 5)
    prompt = recorder.calls[0]["messages"][-1]["content"]
    assert prompt.index("take coin") < prompt.index("wait")
    assert r.output["actions"][0] != "wait"


def test_a_long_list_is_cut_to_its_first_actions_with_a_note():
    program = ReActPlainProgram(max_actions=2)
    inputs = {"task": "t", "last_action": "", "observation": "o", "step": 1, "step_cap": 5,
              "actions": ["a", "b"], "more": 3}
    text = program.act.render("", inputs)[-1]["content"]
    assert "1. a\n2. b\n(3 more actions are possible.)" in text and "in words" not in text
    text = program.act.render("", {**inputs, "free_verbs": ["go"]})[-1]["content"]
    assert "(3 more actions are possible; you may also write one in words.)" in text
    assert "(" not in program.act.render("", {**inputs, "more": 0})[-1]["content"]


def test_both_programs_are_registered_with_the_act_route():
    plain, scaffolded = load_program("react_plain"), load_program("twx_scaffolded")
    assert (plain.name, plain.routes) == ("react_plain", ["twx.act"])
    assert (scaffolded.name, scaffolded.routes) == ("twx_scaffolded", ["twx.act"])


def _twx(test):
    for mark in needs_twx:
        test = mark(test)
    return test


@_twx
def test_the_plain_program_plays_the_games_first_action_on_reply_1(script, make_lm):
    script(["1"] * 4)
    bench = load_benchmark("twx/coin")
    result = Executor(benchmark=bench, program=load_program("react_plain", bench), lm=make_lm(), step_cap=4,
                      progress=False, keep_traces=True).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None, r.error
    env_nodes = result.traces[r.task_id].nodes(kind="env")
    for before, step in zip(env_nodes, env_nodes[1:]):
        assert step["action"] == before["valid_actions"][0]  # the game's first action, every step
    assert not any(n.get("override") for n in result.traces[r.task_id].nodes(kind="module"))
