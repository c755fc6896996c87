"""TextWorldExpress benchmark (deterministic disjoint splits, a neutral environment, metric feedback) and the
scaffolded program (``twx_scaffolded``, also registered as ``twx_react``): action matching, ranking, confirmation."""

import re
import shutil
from types import SimpleNamespace

import pytest

from nlgrad.programs.action_reply import match_action
from nlgrad.programs.twx_scaffolded import (consumes_unnamed, math_problem, note_outcome, pick_action, rank_actions,
                                            shown_actions)
from nlgrad.runtime.context import Output
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.registry import load_benchmark, load_program

pytest.importorskip("textworld_express")
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java")


def test_splits_are_deterministic_and_disjoint():
    bench = load_benchmark("twx/coin")
    ids = {split: {t.seed for t in bench.tasks(split, 50)} for split in ("train", "dev", "test")}
    assert not (ids["train"] & ids["dev"]) and not (ids["dev"] & ids["test"]) and not (ids["train"] & ids["test"])
    assert [t.id for t in bench.tasks("dev", 3)] == ["twx/coin/dev/10000", "twx/coin/dev/10001", "twx/coin/dev/10002"]


def test_unknown_game_and_split_are_clear_errors():
    from nlgrad.errors import BenchmarkError

    with pytest.raises(BenchmarkError, match="chess"):
        load_benchmark("twx/chess")
    with pytest.raises(BenchmarkError, match="validation"):
        load_benchmark("twx/coin").tasks("validation")
    with pytest.raises(BenchmarkError, match="nosuch"):
        load_benchmark("nosuch/x")


@needs_java
def test_random_floor_runs_real_episodes_with_feedback(make_lm):
    bench = load_benchmark("twx/coin")
    ex = Executor(benchmark=bench, program=load_program("twx_random", bench), lm=make_lm(), step_cap=10,
                  workers=2, progress=False, keep_traces=True)
    result = ex.run(bench.tasks("dev", 4))
    assert [r.error for r in result.results] == [None] * 4
    for r in result.results:
        assert 1 <= r.steps <= 10 and "Last game message" in r.feedback
        assert ("succeeded" in r.feedback) == r.success
        trace = result.traces[r.task_id]
        steps = trace.nodes(kind="env")
        assert steps[0]["route"] == "env.reset" and len(steps) == r.steps + 1
        for prev, nxt in zip(steps, steps[1:]):  # each step depends on the previous one
            assert prev["id"] in trace.parents(nxt["id"])


@pytest.mark.parametrize("reply, expected", [
    ("2", (1, "number")), ("Action: 3.", (2, "number")), ("take coin", (1, "text")),
    ("move est", (0, "fuzzy")), ("99", (None, "none")), ("", (None, "none")),
])
def test_match_action_is_robust(reply, expected):
    assert match_action(reply, ["move east", "take coin", "open door to west"]) == expected


def test_rank_actions_puts_untried_relevant_first():
    ranked = rank_actions(["close door to west", "inventory", "move east", "take coin"],
                          "Find the coin. Once you find the coin, take it.", tried={"move east"})
    assert [a["text"] for a in ranked] == ["take coin", "close door to west", "inventory", "move east"]
    assert ranked[-1]["tried"] and not ranked[0]["tried"]


def test_rank_actions_lists_an_action_that_lowered_the_score_after_the_other_untried_ones():
    actions = ["inventory", "put dress in bench", "put dress in washing machine", "take bra"]
    ranked = rank_actions(actions, "Put objects in their usual places.", tried={"take bra"},
                          lowered={"put dress in bench", "take bra"})
    assert [a["text"] for a in ranked] == ["put dress in washing machine", "inventory", "put dress in bench",
                                           "take bra"]
    assert [a.get("lowered", False) for a in ranked] == [False, False, True, True]
    assert "lowered" not in rank_actions(actions, "", tried=set())[0]  # absent unless set: prompts unchanged


@needs_java
def test_a_move_that_lowered_the_score_is_marked_in_later_states(play_scripted):
    # twc: a wrong "put X in Y" costs score; with a positional agent (always "1") the program must not keep
    # offering it as a fresh move when the room has changed
    _, r, trace = play_scripted("twx/twc", ["1"] * 30, step_cap=30, program="twx_scaffolded")
    steps = [n for n in trace.nodes(kind="env") if n["route"] == "env.step"]
    prompts = [n["messages"][-1]["content"] for n in trace.nodes(kind="module")]
    worse = [(i, s["action"]) for i, s in enumerate(steps) if float(s["reward"]) < 0]
    assert worse, [s["action"] for s in steps]
    checked = 0
    for i, action in worse:
        listed = re.compile(rf"^\d+\. {re.escape(action)}( \(.*)?$", re.M)
        later = [listed.search(p).group() for p in prompts[i + 1:] if listed.search(p)]
        if later:  # the next prompt that lists it marks it
            line = later[0]
            assert "(would lower the score)" in line, line
            checked += 1
    assert checked
    assert len({a for _, a in worse}) == len(worse)  # no wrong move was made twice


def test_note_outcome_tracks_moves_that_would_lower_the_score():
    lowering: set[str] = set()
    note_outcome(lowering, "put dress in bench", -0.25)
    note_outcome(lowering, "put dress in washing machine", 0.25)
    assert lowering == {"put dress in bench", "take dress"}  # taking a placed object back out costs its reward
    note_outcome(lowering, "take dress", 0.25)  # (e.g. from a wrong place): no longer lowering
    note_outcome(lowering, "put bra on bench", 0.0)
    assert lowering == {"put dress in bench"}


def test_rank_actions_follows_what_was_read_and_demotes_fruitless_and_consuming_moves():
    task = "You are hungry! Let's cook a delicious meal. Check the cookbook for the recipe. Enjoy your meal!"
    actions = ["eat meal", "eat yellow pepper", "examine knife", "open fridge", "read cookbook", "take cookbook",
               "take knife", "take yellow pepper"]
    before = [a["text"] for a in rank_actions(actions, task, tried=set())]
    assert before[:3] == ["read cookbook", "eat meal", "take cookbook"]  # reading first, then the task's words
    assert "eat yellow pepper" not in before and before[-1] == "examine knife"  # eating what the task does not name
    recipe = "Ingredients: yellow pepper. Directions: slice the yellow pepper, prepare meal."
    after = [a["text"] for a in rank_actions(actions, task, tried=set(), read_text=recipe,
                                             fruitless={"take cookbook"})]
    assert after[:2] == ["take yellow pepper", "eat meal"]  # now the recipe's words
    assert after.index("take cookbook") > after.index("take knife")  # played before without raising the score
    assert consumes_unnamed("eat yellow pepper", {"meal"}) and not consumes_unnamed("eat meal", {"meal"})


def test_shown_actions_keeps_fresh_actions_and_a_short_tail_when_the_list_is_too_long():
    ranked = rank_actions([f"examine thing {i}" for i in range(12)] + ["open fridge", "take knife", "inventory"],
                          "cook a meal", tried={"take knife"})
    assert shown_actions(ranked, 15) == ranked  # fits: unchanged
    shown = [a["text"] for a in shown_actions(ranked, 10, tail=3)]
    assert shown == ["open fridge", "examine thing 0", "examine thing 1", "examine thing 2"]
    assert [a["text"] for a in shown_actions(ranked, 10)] == ["open fridge"]  # default: fresh ones only
    stale = rank_actions([f"examine thing {i}" for i in range(12)], "cook a meal", tried={"examine thing 0"})
    assert [a["text"] for a in shown_actions(stale, 10)] == [f"examine thing {i}" for i in range(1, 11)]


def test_rank_actions_does_not_count_a_verb_the_task_uses_for_every_object():
    # ScienceWorld tasks say "First, focus on the substance": every irreversible "focus on X" used to match "focus"
    task = "Your task is to melt ice cream. First, focus on the substance."
    ranked = rank_actions(["focus on axe", "go to hallway", "focus on ice cream"], task, tried=set())
    assert [a["text"] for a in ranked] == ["focus on ice cream", "focus on axe", "go to hallway"]
    ranked = rank_actions(["go to hallway", "focus on axe"], task, tried=set())
    assert [a["text"] for a in ranked] == ["go to hallway", "focus on axe"]  # no overlap either way: env order


def test_pick_action_keeps_a_fresh_pick_and_overrides_repeats_and_garbage():
    trace = SimpleNamespace(updates=[], update_node=lambda node, **kw: trace.updates.append((node, kw)))
    ctx = SimpleNamespace(trace=trace)
    actions = [{"text": "take coin", "tried": False}, {"text": "move east", "tried": True}]
    pick = lambda index, loop_breaker=True: pick_action(ctx, Output({"index": index}, "n1"), actions,  # noqa: E731
                                                        loop_breaker)
    assert pick(0) == (0, False) and pick(1, loop_breaker=False) == (1, False) and trace.updates == []
    assert pick(1) == (0, True) and pick(None) == (0, True)
    assert [kw["override"] for _, kw in trace.updates] == [
        {"chosen": "take coin", "reason": "repeated action in the same state"},
        {"chosen": "take coin", "reason": "unparsable reply"}]
    actions[0]["tried"] = True  # all tried: a repeat stands, garbage falls back to the first action
    assert pick(1) == (1, False) and pick(None) == (0, True)


@needs_java
@pytest.mark.parametrize("game", ["twc", "cooking", "arithmetic", "sorting"])
def test_every_game_resets_and_steps(game, make_lm):
    bench = load_benchmark(f"twx/{game}")
    ex = Executor(benchmark=bench, program=load_program("twx_random", bench), lm=make_lm(), step_cap=3,
                  progress=False)
    result = ex.run(bench.tasks("dev", 1))
    assert result.results[0].error is None and result.results[0].steps >= 1


@pytest.mark.parametrize("game,own", [("arithmetic", True), ("sorting", True), ("cooking", True), ("coin", False),
                                      ("twc", False)])
def test_human_policy_is_the_games_own_file_when_it_has_one(game, own):
    from nlgrad.policy import PolicyMemory

    bench = load_benchmark(f"twx/{game}")
    assert bench.human_policy.name == (f"twx-{game}.yaml" if own else "twx.yaml")
    memory = PolicyMemory.load(bench.human_policy)
    assert set(memory.routes()) >= {"twx.act", "team_twx.planner", "team_twx.actor"}
    text = memory.render("twx.act")
    assert ("math problem" in text) == (game == "arithmetic")


def test_text_answers_match_the_action_not_a_number_inside_it():
    from nlgrad.programs.action_reply import match_action_text, parse_choice

    actions = ["take 2 apples", "open door", "open door to west", "move east"]
    assert match_action_text("take 2 apples", actions) == (0, "text")
    assert match_action_text("Open door to west.", actions) == (2, "text")  # the longest contained action
    assert match_action_text("I will move east now", actions) == (3, "text")
    assert match_action_text("2", actions) == (1, "number")
    assert match_action_text("mvoe east", actions) == (3, "fuzzy")
    assert match_action_text("dance", actions) == (None, "none")
    listed = {"actions": [{"text": a, "tried": False} for a in actions]}
    assert parse_choice("take 2 apples", listed)["index"] == 1  # number mode reads the 2 as a list position
    assert parse_choice("take 2 apples", {**listed, "answer_text": True})["index"] == 0


def test_the_text_program_lists_actions_without_numbers():
    from nlgrad.programs.twx_scaffolded import TWXScaffoldedProgram, TWXScaffoldedTextProgram

    inputs = {"task": "Find the coin.", "last_action": "", "observation": "A kitchen.", "visited": ["kitchen"],
              "step": 1, "step_cap": 50, "actions": [{"text": "move east", "tried": False}]}
    numbered = TWXScaffoldedProgram().act.render("", inputs)[-1]["content"]
    text = TWXScaffoldedTextProgram().act.render("", {**inputs, "answer_text": True})[-1]["content"]
    assert "1. move east" in numbered and numbered.rstrip().endswith("Answer with one number.")
    assert "- move east" in text and "1." not in text
    assert text.rstrip().endswith("Answer with one action from the list.")
    assert TWXScaffoldedTextProgram().act.max_tokens > TWXScaffoldedProgram().act.max_tokens
    with pytest.raises(ValueError, match="answer must be"):
        TWXScaffoldedProgram(answer="letter")


@needs_java
def test_the_program_alone_wins_twc_with_a_constant_reply():
    # scripts/constant_agent.py: the agent always answers "1"; the ranking (untried first, moves that would lower the
    # score last, fruitless moves after fresh ones) and the loop breaker must still put both objects away
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "constant_agent.py"
    out = subprocess.run([sys.executable, str(script), "--benchmark", "twx/twc", "--n", "3", "--replies", "1"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert "twx/twc reply='1' n=3 mean=1.000 wins=3 errors=0" in out, out


def test_rank_actions_reads_first_and_then_puts_the_calculated_answer_first():
    actions = ["put math problem in box", "read math problem", "take 3 pears", "take 31 watermelons",
               "take 7 brocollis"]
    task = "Solve the math problem. Then, pick up the item with the same quantity as the answer, place it in the box."
    assert [a["text"] for a in rank_actions(actions, task, tried=set())][0] == "read math problem"
    solved = [a["text"] for a in rank_actions(actions, task, tried={"read math problem"}, answer="3")]
    assert solved == ["take 3 pears", "put math problem in box", "read math problem"]  # "3", not the 3 of "31";
    # other quantities are not listed; "read" is tried
    sciworld = [a["text"] for a in rank_actions(actions, task, tried=set(), match_words=False)]
    assert sciworld == actions  # an environment-ranked list keeps its order (no read-first)


def test_math_problem_is_the_numbered_sentence_of_what_was_read():
    text = ("Your task is to solve the following math problem: add 22 and 23 . \nThen, pick up the item with the same "
            "quantity as the answer, and place it in the box. ")
    assert math_problem(text) == "Your task is to solve the following math problem: add 22 and 23 ."
    assert math_problem("Ingredients: red potato. Directions: slice the red potato, prepare meal.") == ""


@needs_java
def test_arithmetic_is_solved_by_the_solve_module_and_the_calculator(make_lm, script):
    # dev seed 10001 reads "subtract 23 from 26"; the agent always answers "1", the solve module "26 - 23"
    recorder = script(["1", "1", "Expression: 26 - 23", "1", "1"] + ["1"] * 10)
    bench = load_benchmark("twx/arithmetic")
    program = load_program("twx_scaffolded", bench)
    assert program.routes == ["twx.act", "twx.solve"]
    result = Executor(benchmark=bench, program=program, lm=make_lm(), step_cap=20, progress=False,
                      keep_traces=True).run(bench.tasks("dev", 2)[1:])
    (r,) = result.results
    assert r.error is None, r.error
    assert r.success and r.output["calculation"] == "26 - 23 = 3"
    assert r.output["actions"] == ["take math problem", "read math problem", "take 3 pears", "put 3 pears in box"]
    trace = result.traces[r.task_id]
    (tool,) = trace.nodes(kind="tool")
    assert tool["route"] == "calculator" and tool["args"] == {"expression": "26 - 23"} and tool["result"] == "3"
    prompts = [n["messages"][-1]["content"] for n in trace.nodes(kind="module") if n["route"] == "twx.act"]
    assert "Calculator: 26 - 23 = 3" in prompts[2] and "1. take 3 pears" in prompts[2]
    assert "Calculator" not in prompts[1]
    assert len(recorder.calls) == 5


@needs_java
def test_an_expression_the_calculator_refuses_is_recorded_and_the_game_goes_on(make_lm, script):
    script(["1", "1", "twenty six minus twenty three"] + ["1"] * 10)
    bench = load_benchmark("twx/arithmetic")
    result = Executor(benchmark=bench, program=load_program("twx_scaffolded", bench), lm=make_lm(), step_cap=6,
                      progress=False, keep_traces=True).run(bench.tasks("dev", 2)[1:])
    (r,) = result.results
    assert r.error is None, r.error
    assert r.output["calculation"] == ""
    (tool,) = result.traces[r.task_id].nodes(kind="tool")
    assert "cannot evaluate 'twenty six minus twenty three'" in tool["error"]


def test_games_without_math_problems_have_no_solve_route():
    assert load_program("twx_scaffolded", load_benchmark("twx/coin")).routes == ["twx.act"]
    # cooking has no math problem, but irreversible "cook X in ..." actions: the confirm route
    assert load_program("twx_scaffolded", load_benchmark("twx/cooking")).routes == ["twx.act", "twx.confirm"]


@needs_java
def test_cooking_lists_putting_an_ingredient_down_after_every_other_kind(make_lm, script):
    # dev seed 10000: once the yellow bell pepper is taken, "put yellow bell pepper in ..." (it names the recipe's
    # ingredient, so it ranked first by word overlap) is not listed while fresh actions remain
    recorder = script(["1"] * 5)
    bench = load_benchmark("twx/cooking")
    result = Executor(benchmark=bench, program=load_program("twx_scaffolded", bench), lm=make_lm(), step_cap=5,
                      progress=False, keep_traces=True).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.output["actions"][-1] == "take yellow bell pepper"
    assert len(recorder.calls) == 5
    last_listed = [line for line in recorder.calls[-1]["messages"][-1]["content"].splitlines() if line[:1].isdigit()]
    assert last_listed and not any(". put " in line for line in last_listed)
    ranked = rank_actions(["put egg in fridge", "open fridge", "take egg"], "cook the egg", set(),
                          low_priority=("put ",))
    assert [a["text"] for a in ranked] == ["take egg", "open fridge", "put egg in fridge"]


@needs_java
@pytest.mark.parametrize("confirm, played, lost, agreed", [
    # the recipe says roast: the oven, as the act picked ("1" in the first order, "2" in the rotated one)
    (["1", "2"], "cook yellow bell pepper in oven", False, True),
    (["2", "3"], "cook yellow bell pepper in stove", True, True),  # the stove fries it: the game is lost
    (["4", "1"], "take chicken wing", False, True),  # none of these: the first untried other action is played
    # a positional reply ("1" in both orders) names the oven, then "none": nothing is confirmed, nothing cooked
    (["1", "1"], "take chicken wing", False, False),
    (["3", "cook yellow bell pepper in oven"], "take chicken wing", False, False),  # toaster, then oven: differ
])
def test_an_irreversible_pick_is_played_only_when_both_confirm_orders_name_it(make_lm, script, confirm, played,
                                                                                lost, agreed):
    # dev seed 10000 (recipe: slice and roast the yellow bell pepper, roast the chicken wing); the act always
    # answers "1": read cookbook, open cutlery drawer, open dishwasher, open fridge, take yellow bell pepper, and then
    # "cook yellow bell pepper in oven", which the confirm module checks against its three appliances, twice
    recorder = script(["1"] * 6 + confirm)
    bench = load_benchmark("twx/cooking")
    program = load_program("twx_scaffolded", bench)
    assert program.routes == ["twx.act", "twx.confirm"]
    result = Executor(benchmark=bench, program=program, lm=make_lm(), step_cap=6, progress=False,
                      keep_traces=True).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None, r.error
    assert r.output["actions"][5] == played
    trace = result.traces[r.task_id]
    first, second = [n for n in trace.nodes(kind="module") if n["route"] == "twx.confirm"]
    for node in (first, second):
        assert "roast the yellow bell pepper" in node["messages"][-1]["content"]  # what the agent read: the recipe
    assert "1. cook yellow bell pepper in oven\n2. cook yellow bell pepper in stove\n" in first["messages"][-1]["content"]
    assert "4. none of these yet" in first["messages"][-1]["content"]
    assert ("1. none of these yet: do something else first\n2. cook yellow bell pepper in oven\n"
            in second["messages"][-1]["content"])
    assert not first.get("override")
    # the played action depends on both answers: the environment step is a child of both confirm nodes
    step = next(n for n in trace.nodes(kind="env") if n.get("action") == played)
    assert {first["id"], second["id"]} <= set(trace.parents(step["id"]))
    if played != "cook yellow bell pepper in oven":
        assert second["override"]["chosen"] == played
        assert second["override"]["instead_of"] == "cook yellow bell pepper in oven"
        assert (second["override"]["reason"] == "confirmation of an irreversible action") == agreed
    else:
        assert not second.get("override")
    assert not r.success and len(recorder.calls) == 8
    assert ("the game ended after 6 steps" in r.feedback) == lost and ("You fry the" in r.feedback) == lost


@needs_java
def test_one_confirm_order_without_robust_confirm(make_lm, script):
    # robust_confirm=False: the first order only, as before; "1" plays the act's pick (the oven)
    recorder = script(["1"] * 7)
    bench = load_benchmark("twx/cooking")
    program = load_program("twx_scaffolded", bench, robust_confirm=False)
    result = Executor(benchmark=bench, program=program, lm=make_lm(), step_cap=6, progress=False,
                      keep_traces=True).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.output["actions"][5] == "cook yellow bell pepper in oven"
    assert len(recorder.calls) == 7


@needs_java
def test_none_of_these_never_plays_another_irreversible_action_unconfirmed(make_lm, script):
    # dev seed 10000 as above, with the act answering "1" and then "4", "1" in turn: a confirm pair that reads
    # "4", "1" agrees on "none of these", one that reads "1", "4" disagrees; either way what is played instead of a
    # set-aside family is never a cook or a cut that the confirm module did not check
    script(["1"] * 6 + ["4", "1"] * 12)
    bench = load_benchmark("twx/cooking")
    result = Executor(benchmark=bench, program=load_program("twx_scaffolded", bench), lm=make_lm(), step_cap=12,
                      progress=False, keep_traces=True).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None, r.error
    confirms = [n for n in result.traces[r.task_id].nodes(kind="module") if n["route"] == "twx.confirm"]
    assert confirms
    for node in confirms:
        chosen = (node.get("override") or {}).get("chosen")
        assert chosen is None or not chosen.startswith(("cook ", "slice ", "dice ", "chop ")), chosen


# ------------------------------------------------------------------------------- the environment reports, only
@needs_java
def test_the_environment_reports_the_games_own_valid_actions_in_the_games_order():
    from textworld_express import TextWorldExpressEnv

    from nlgrad.benchmarks.twx import MAX_VALID_ACTIONS

    bench = load_benchmark("twx/cooking")
    task = bench.tasks("dev", 1)[0]
    env, raw = bench.make_env(), TextWorldExpressEnv(envStepLimit=1000)
    try:
        raw.load(gameName="cookingworld", gameParams=bench.params)
        obs = env.reset(task)
        text, infos = raw.reset(seed=task.seed, gameFold="dev", gameName="cookingworld", gameParams=bench.params)
        assert obs.valid_actions == list(infos["validActions"])[:MAX_VALID_ACTIONS]  # as the game lists them
        assert obs.text == text.strip() and obs.info["task"] == infos["taskDescription"]
        assert set(obs.info) == {"look", "inventory", "state_key", "task", "moves"}  # nothing derived from the task
        for action in obs.valid_actions[:3]:
            step = env.step(action)
            text, _, _, infos = raw.step(action)
            assert step.observation.text == text.strip()
            assert step.observation.valid_actions == list(infos["validActions"])[:MAX_VALID_ACTIONS]
    finally:
        env.close()
        raw.close()


@pytest.mark.parametrize("game", ["coin", "twc", "cooking", "arithmetic", "sorting"])
def test_benchmarks_declare_no_game_knowledge_and_the_scaffolded_program_carries_it(game):
    from nlgrad.programs.game_knowledge import knowledge_for

    bench = load_benchmark(f"twx/{game}")
    for hint in ("irreversible", "low_priority", "math_problems", "max_actions", "actions_ranked"):
        assert not hasattr(bench, hint), hint
    knowledge = knowledge_for(bench)
    assert bool(knowledge.irreversible) == bool(knowledge.low_priority) == (game == "cooking")
    assert knowledge.math_problems == (game == "arithmetic") and knowledge.view is None
    assert bench.default_program == "twx_scaffolded"


def test_twx_react_is_the_scaffolded_program_under_its_earlier_name():
    from nlgrad.programs.twx_scaffolded import TWXScaffoldedProgram

    bench = load_benchmark("twx/cooking")
    alias, program = load_program("twx_react", bench), load_program("twx_scaffolded", bench)
    assert isinstance(alias, TWXScaffoldedProgram) and (alias.name, program.name) == ("twx_react", "twx_scaffolded")
    assert alias.routes == program.routes == ["twx.act", "twx.confirm"]
    assert load_program("twx_react_text", bench).name == "twx_react_text"


def test_the_scaffolded_program_reads_the_room_from_the_games_description():
    from nlgrad.programs.twx_scaffolded import room_of
    from nlgrad.runtime.protocols import Observation

    assert room_of(Observation("", info={"look": "You are in the kitchen. In one part of the room you see"})) == \
        "kitchen"
    assert room_of(Observation("", info={"look": "This room is called the bathroom. In it, you see:"})) == "bathroom"
    assert room_of(Observation("", info={"room": "hall", "look": "You are in the kitchen."})) == "hall"
    assert room_of(Observation("")) == ""
