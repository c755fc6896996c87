"""ScienceWorld: the benchmark (folds from the package, a neutral environment that reports the package's own valid
actions, metric feedback), the scaffolded program's ScienceWorld knowledge (``programs/sciworld_knowledge.py``: which
actions it lists, which focuses the task settles) and both programs on the real simulator.

The simulator is a JVM (~1.5 s to start, ~0.1-0.25 s a step), so the tests that need it share one environment and
keep episodes a few steps long; the whole file runs in well under a minute on 2 cores. One last test runs the real
local model (marked ``local_model``, 3 steps).
"""

from __future__ import annotations

import shutil

import pytest
from local_server_check import require_local_server

from nlgrad.benchmarks.sciworld import FOLDS, MAX_VALID_ACTIONS, ScienceWorldBenchmark
from nlgrad.errors import BenchmarkError
from nlgrad.programs.sciworld_knowledge import (MAX_ACTIONS, ScienceWorldView, destination_words, focus_targets,
                                                is_reading, next_focus_words, room_of, select_actions,
                                                settled_by_task)
from nlgrad.programs.action_reply import free_form_action, parse_choice
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import Episode, Observation, Task
from nlgrad.runtime.registry import load_benchmark, load_program

needs_sim = [
    pytest.mark.skipif(shutil.which("java") is None, reason="ScienceWorld needs Java"),
    pytest.mark.skipif(__import__("importlib").util.find_spec("scienceworld") is None,
                       reason="scienceworld is not installed (pip install 'nlgrad[sciworld]')"),
]


def _sim(test):
    for mark in needs_sim:
        test = mark(test)
    return test


@pytest.fixture(scope="module")
def living_env():
    env = ScienceWorldBenchmark("find-living-thing").make_env()
    yield env
    env.close()


# ------------------------------------------------------------------------------------------------ tasks and splits
def test_ids_splits_are_deterministic_disjoint_and_small():
    for name in FOLDS:
        bench = load_benchmark(f"sciworld/{name}")
        seeds = {split: [t.seed for t in bench.tasks(split)] for split in ("train", "dev", "test")}
        assert not set(seeds["train"]) & set(seeds["dev"]) and not set(seeds["dev"]) & set(seeds["test"])
        assert not set(seeds["train"]) & set(seeds["test"])
        assert len(seeds["dev"]) <= 20 and len(seeds["test"]) <= 20
        assert bench.tasks("dev") == bench.tasks("dev")
    melt = load_benchmark("sciworld/melt")
    assert [len(melt.tasks(s)) for s in ("train", "dev", "test")] == [14, 7, 9]
    assert [t.id for t in load_benchmark("sciworld").tasks("dev", 2)] == [
        "sciworld/find-living-thing/dev/150", "sciworld/find-living-thing/dev/151"]
    assert load_benchmark("sciworld/use-thermometer").tasks("test", 1)[0].seed == 405


def test_unknown_task_and_split_are_clear_errors():
    with pytest.raises(BenchmarkError, match="boil-everything"):
        load_benchmark("sciworld/boil-everything")
    with pytest.raises(BenchmarkError, match="validation"):
        load_benchmark("sciworld/melt").tasks("validation")


@_sim
def test_folds_are_the_packages_own(living_env):
    env = living_env._env
    for name, (train, dev, test, end) in FOLDS.items():
        env.load(name, 0, "easy")
        assert env.get_variations_train() == list(range(train, dev)), name
        assert env.get_variations_dev() == list(range(dev, test)), name
        assert env.get_variations_test() == list(range(test, end)), name


# ------------------------------------------------------------- the scaffolded program's list (sciworld_knowledge)
KITCHEN_VALID = [
    "look around", "inventory", "wait", "wait1", "reset task", "task", "teleport to kitchen", "teleport to outside",
    "teleport to bathroom", "teleport to greenhouse", "go to outside", "go to door to outside", "focus on agent",
    "focus on air", "focus on door to outside", "focus on red box", "focus on apple", "focus on orange in bowl",
    "focus on orange in inventory", "pick up apple", "pick up orange in inventory", "open fridge", "activate stove",
    "look at apple", "pour apple into red box", "mix apple", "eat apple", "move apple to red box",
    "move apple to chair", "move chair to table", "move orange in inventory to red box",
    "move orange in inventory to stove", "use thermometer on apple",
] + [f"move thing{i} to table" for i in range(400)] + [f"focus on thing{i}" for i in range(40)]


def test_select_actions_is_bounded_and_useful():
    task = ("Your task is to find a(n) living thing. First, focus on the thing. Then, move it to the red box in the "
            "kitchen.")
    look = "This room is called the kitchen. In it, you see:\n\ta stove, which is turned off. On the stove is: nothing."
    inventory = "In your inventory, you see:\n\tan orange\n"
    actions = select_actions(KITCHEN_VALID, task, "kitchen", ["kitchen"], look, inventory)
    assert len(actions) <= MAX_ACTIONS and len(set(actions)) == len(actions)
    assert set(actions) <= set(KITCHEN_VALID)
    assert actions[-1] == "wait1"
    for action in ("go to outside", "focus on red box", "pick up apple", "open fridge", "activate stove"):
        assert action in actions, action
    assert "move orange in inventory to red box" not in actions  # the destination comes after the focus
    actions = select_actions(KITCHEN_VALID, task, "kitchen", ["kitchen"], look, inventory, focused=1)
    for action in ("move orange in inventory to red box", "move apple to red box"):
        assert action in actions, action
    for action in ("reset task", "teleport to kitchen", "teleport to outside", "go to door to outside",
                   "focus on agent", "focus on door to outside", "pick up orange in inventory", "look at apple",
                   "pour apple into red box", "move chair to table", "use thermometer on apple"):
        assert action not in actions, action  # unsafe, here already, a neighbour, held, or noise
    assert sum(a.startswith("focus on ") for a in actions) <= 7
    assert sum(a.startswith("move ") for a in actions) <= 4
    assert actions.index("move orange in inventory to red box") < actions.index("move apple to red box")
    assert select_actions([], task, "kitchen", []) == []


def test_a_focus_the_task_does_not_name_is_listed_after_every_other_kind():
    valid = ["focus on axe", "focus on ice cream", "go to hallway", "pick up axe", "teleport to kitchen",
             "teleport to hallway", "wait1", "look around"]
    task = "Your task is to melt ice cream. First, focus on the substance."
    look = "This room is called the workshop. In it, you see:\n\tan axe\n\tice cream"
    assert select_actions(valid, task, "workshop", ["workshop"], look) == [  # the task names its focus: no other
        "focus on ice cream", "go to hallway", "teleport to kitchen", "pick up axe", "wait1"]
    living = "Your task is to find a(n) living thing. First, focus on the thing."  # names no particular thing
    assert select_actions(["focus on axe", "focus on bee", "go to hallway", "pick up axe", "wait1"], living,
                          "workshop", ["workshop"], look)[-3:] == ["focus on axe", "focus on bee", "wait1"]
    assert not any(a.startswith("focus on ") for a in select_actions(
        ["focus on axe", "go to hallway", "wait1"], living, "workshop", ["workshop"], look, focused=1))  # made


def test_a_focus_on_the_destination_a_generic_word_or_a_later_target_is_listed_last():
    living = ("Your task is to find a(n) living thing. First, focus on the thing. Then, move it to the red box in the "
              "kitchen.")
    valid = ["focus on red box", "focus on bee", "go to hallway", "wait1"]
    assert destination_words(living) == {"red", "box"}
    assert select_actions(valid, living, "kitchen", [])[-2:] == ["focus on red box", "wait1"]
    melt = "Your task is to melt ice cream. First, focus on the substance. Then, take actions."
    assert select_actions(["focus on substance in toilet", "go to hallway", "wait1"], melt, "bathroom", []) == [
        "go to hallway", "wait1"]  # melt names its substance, the ice cream
    thermo = ("Your task is to measure the temperature of unknown substance B. First, focus on the thermometer. "
              "Next, focus on the unknown substance B. If it is above 50.0 degrees, place it in the green box.")
    assert focus_targets(thermo) == [{"thermometer"}, {"unknown", "b"}]
    valid = ["focus on thermometer", "focus on unknown substance b", "go to hallway", "wait1"]
    look = "This room is called the bathroom. In it, you see:\n\ta thermometer\n\tunknown substance B"
    assert select_actions(valid, thermo, "bathroom", [], look)[0] == "focus on thermometer"
    assert "focus on unknown substance b" not in select_actions(valid, thermo, "bathroom", [], look)  # not yet
    assert select_actions(valid, thermo, "bathroom", [], look, focused=1)[0] == "focus on unknown substance b"


THERMO = ("Your task is to measure the temperature of unknown substance B, which is located around the bathroom. "
          "First, focus on the thermometer. Next, focus on the unknown substance B. If the unknown substance B "
          "temperature is above 50.0 degrees celsius, place it in the green box. If the unknown substance B "
          "temperature is below 50.0 degrees celsius, place it in the blue box. The boxes are located around the "
          "bathroom.")


def test_the_focus_the_task_names_is_settled_by_its_words():
    assert next_focus_words(THERMO) == {"thermometer"}
    assert next_focus_words(THERMO, 1) == {"unknown"}  # "B": the simulator names it "unknown substance"
    assert next_focus_words(THERMO, 2) == set()
    assert next_focus_words("Your task is to melt soap. First, focus on the substance.") == {"soap"}
    for described in ("Your task is to find the animal with the longest life span. Focus on the animal with the "
                      "longest life span.", "Your task is to find a(n) living thing. First, focus on the thing."):
        assert next_focus_words(described) == set()  # knowledge decides these: the agent's choice
    assert settled_by_task("focus on thermometer in inventory", THERMO)
    assert not settled_by_task("focus on unknown substance", THERMO)  # not yet: the thermometer comes first
    assert settled_by_task("focus on unknown substance", THERMO, focused=1)
    assert not settled_by_task("focus on cup containing thermometer", THERMO)  # the cup is not the thermometer
    for box in ("green box", "blue box"):  # two destinations, by temperature: the agent's choice
        assert not settled_by_task(f"move unknown substance to {box}", THERMO, focused=2)
    reading = "the thermometer measures a temperature of 31 degrees celsius"
    assert is_reading("use thermometer in inventory on unknown substance", reading, THERMO)
    assert not is_reading("use thermometer in inventory on blue box", reading, THERMO)  # not the task's thing
    living = "Your task is to find a(n) living thing. First, focus on the thing. Then, move it to the red box."
    assert settled_by_task("move baby bee in inventory to red box", living, focused=1)
    assert not settled_by_task("move baby bee in inventory to red box", living)  # before the focus
    assert not settled_by_task("move baby bee in inventory to blue box", living, focused=1)


def test_the_named_focus_is_looked_for_where_seen_then_in_unvisited_rooms():
    valid = ["teleport to kitchen", "teleport to bathroom", "teleport to workshop", "pick up unknown substance",
             "focus on unknown substance", "move unknown substance to green box", "wait1"]
    here = "This room is called the bathroom. In it, you see:\n\tunknown substance B\n\ta green box"
    actions = select_actions(valid, THERMO, "bathroom", ["bathroom", "kitchen"], here)
    assert actions[0] == "teleport to workshop"  # no thermometer in sight: an unvisited room first
    assert "focus on unknown substance" not in actions  # not yet: the thermometer comes first
    done = select_actions(valid, THERMO, "bathroom", ["bathroom", "kitchen"], here, focused=2)
    move = "move unknown substance to green box"
    assert done.index(move) < actions.index(move)  # the destination ranks higher once both focuses are made
    assert actions.index(move) > actions.index("pick up unknown substance")
    held = "In your inventory, you see:\n\ta thermometer"
    elsewhere = "This room is called the kitchen. In it, you see:\n\ta chair"
    kitchen = ["teleport to bathroom", "teleport to workshop", "focus on thermometer in inventory", "wait1"]
    actions = select_actions(kitchen, THERMO, "kitchen", ["bathroom", "kitchen"], elsewhere, held, focused=1,
                             seen={"bathroom": here, "kitchen": elsewhere})
    assert actions[0] == "teleport to bathroom"  # the substance was seen there
    hidden = select_actions(["open freezer", "focus on ice cream", "go to hallway", "wait1"],
                            "Your task is to melt ice cream. First, focus on the substance.", "kitchen", ["kitchen"],
                            "This room is called the kitchen. In it, you see:\n\ta freezer. The door is closed.")
    assert hidden[0] == "open freezer" and hidden[-2] == "focus on ice cream"  # listed, not in sight: in there


def test_the_programs_view_follows_rooms_focuses_and_readings():
    # what the environment used to compute for the program (seen rooms, accepted focuses, the reading, the settled
    # focus) the program's view now computes from the observations it sees
    bathroom = "This room is called the bathroom. In it, you see:\n\ta thermometer\n\tunknown substance B"
    valid = ["focus on thermometer", "focus on unknown substance b", "go to hallway", "wait1"]

    def seen(message, look=bathroom):
        return Observation(text=message, valid_actions=valid, info={"look": look, "message": message})

    view = ScienceWorldView(THERMO)
    actions, settled = view.observe(seen(""))
    assert actions[0] == "focus on thermometer" and settled == ["focus on thermometer"]
    assert list(view.seen) == ["bathroom"] and view.focused == 0
    actions, settled = view.observe(seen("You focus on the thermometer."), "focus on thermometer")
    assert view.focused == 1 and actions[0] == "focus on unknown substance b"
    assert settled == ["focus on unknown substance b"]
    view.observe(seen("The thermometer measures a temperature of 18 degrees celsius."),
                 "use thermometer in inventory on unknown substance")
    assert "18 degrees" in view.reading
    view.observe(seen("You move to the hallway.", "This room is called the hallway."), "go to hallway")
    assert view.reading == "" and list(view.seen) == ["bathroom", "hallway"]
    view.observe(seen("Ambiguous action 'focus on b'", bathroom), "focus on b")  # not accepted: not counted
    assert view.focused == 1


# --------------------------------------------------------------------------------------------------- the metric
def _episode(*, steps, raw, done, success=False, cap=False, actions=None, message="You focus on the banana."):
    task_obs = Observation(text="...", info={"task": "Your task is to find a(n) living thing.", "raw_score": 0})
    last = Observation(text=message, info={"raw_score": raw, "message": message})
    return Episode(steps=steps, done=done, success=success, score=max(0.0, min(1.0, raw / 100)),
                   first_observation=task_obs, last_observation=last,
                   actions=actions or ["teleport to kitchen", "focus on banana"][:steps], stopped_by_cap=cap)


def test_metric_scores_and_explains_each_outcome():
    bench = ScienceWorldBenchmark("find-living-thing")
    task = bench.tasks("dev", 1)[0]
    won = bench.metric(task, {"actions": []}, _episode(steps=4, raw=100, done=True, success=True,
                                                       message="You move the beaver to the red box."))
    assert won.score == 1.0 and won.success and "succeeded in 4 steps" in won.feedback

    failed = bench.metric(task, {}, _episode(steps=2, raw=-100, done=True))
    assert failed.score == 0.0 and not failed.success
    assert "ScienceWorld score -100" in failed.feedback and "'focus on banana'" in failed.feedback
    assert "Last game message: You focus on the banana." in failed.feedback and "living thing" in failed.feedback
    assert failed.details["raw_score"] == -100

    partial = bench.metric(task, None, _episode(steps=30, raw=75, done=False, cap=True,
                                                message="You move to the outside."))
    assert partial.score == pytest.approx(0.75) and not partial.success
    assert "ran out of steps" in partial.feedback and "ScienceWorld 75/100" in partial.feedback

    for garbage in (None, "not a dict", {"actions": "x"}, 42):  # the metric reads the episode, not the output
        assert bench.metric(task, garbage, _episode(steps=2, raw=-100, done=True)).score == 0.0
    with pytest.raises(BenchmarkError, match="episode"):
        bench.metric(task, {"actions": []}, None)


@pytest.mark.parametrize("reply, expected", [
    ("2", (1, "number")), ("focus on red box", (0, "text")),
    ("pick up baby beaver", (None, "free")), ("Action: teleport to kitchen.", (None, "free")),
    ("I do not know", (None, "none")), ("", (None, "none")),
])
def test_free_form_replies_pass_through_only_with_known_verbs(reply, expected):
    inputs = {"actions": [{"text": "focus on red box"}, {"text": "go to outside"}],
              "free_verbs": ["focus", "go", "pick", "teleport"]}
    parsed = parse_choice(reply, inputs)
    assert (parsed["index"], parsed["match"]) == expected
    if expected[1] == "free":
        assert parsed["action"] == free_form_action(reply, inputs["free_verbs"])
    assert parse_choice("pick up baby beaver", {"actions": inputs["actions"]})["match"] != "free"  # twx: never


# ------------------------------------------------------------------------------------------- the real simulator
@_sim
def test_real_env_episode_focus_ambiguity_and_refusals(living_env):
    env = living_env
    task = Task(id="sciworld/find-living-thing/dev/150", split="dev", seed=150)
    obs = env.reset(task)
    assert room_of(obs.info["look"]) == "kitchen" and "living thing" in obs.info["task"]
    assert "focus" in obs.info["free_text_verbs"] and "reset" not in obs.info["free_text_verbs"]
    # the package's own valid actions, in its order, less the refused "reset task"; nothing settled or read for the
    # program, nothing ranked by the task
    package = env._env.get_valid_action_object_combinations()
    assert obs.valid_actions == [a for a in package if a != "reset task"][:MAX_VALID_ACTIONS]
    assert MAX_ACTIONS < len(obs.valid_actions) == obs.info["n_valid"] - ("reset task" in package)
    assert not {"settled_actions", "reading", "room"} & set(obs.info)

    ambiguous = env.step("focus on orange")  # orange in the bowl or the one held: cancelled, nothing focused
    assert "Ambiguous" in ambiguous.observation.text and "Nothing happened" in ambiguous.observation.text
    assert not ambiguous.done
    refused = env.step("reset task")
    assert "not allowed" in refused.observation.text and not refused.done

    moved = env.step("teleport to outside")  # free text; the room's description comes with the message
    assert room_of(moved.observation.info["look"]) == "outside"
    assert "You teleport to the outside." in moved.observation.text
    assert "called the outside" in moved.observation.text and moved.score > 0 and not moved.done

    wrong = env.step("focus on axe")
    assert wrong.done and not wrong.success and wrong.score == 0.0 and wrong.info == {"failure": True,
                                                                                       "raw_score": -100}


@_sim
def test_real_env_gold_path_succeeds(living_env):
    env = living_env
    env.reset(Task(id="t", split="dev", seed=150))
    steps = ["teleport to outside", "focus on egg giant tortoise", "pick up egg giant tortoise",
             "teleport to kitchen"]
    for action in steps:
        result = env.step(action)
        assert not result.done, (action, result.observation.text)
    assert any("red box" in a for a in result.observation.valid_actions)
    final = env.step("move egg giant tortoise egg in inventory to red box")
    assert final.done and final.success and final.score == 1.0


@_sim
def test_random_floor_runs_real_episodes(make_lm):
    bench = load_benchmark("sciworld/lifespan-longest-lived")
    ex = Executor(benchmark=bench, program=load_program("twx_random", bench), lm=make_lm(), step_cap=4,
                  progress=False, keep_traces=True)
    result = ex.run(bench.tasks("dev", 2))
    assert [r.error for r in result.results] == [None, None]
    for r in result.results:
        assert 1 <= r.steps <= 4 and "Last game message" in r.feedback and 0.0 <= r.score <= 1.0
        steps = result.traces[r.task_id].nodes(kind="env")
        assert steps[0]["route"] == "env.reset" and len(steps) == r.steps + 1
        for before, step in zip(steps, steps[1:]):
            assert step["action"] in before["valid_actions"]


@_sim
def test_scaffolded_program_plays_numbers_free_text_and_overrides_garbage(script, make_lm):
    bench = load_benchmark("sciworld/find-living-thing")
    program = load_program("twx_scaffolded", bench)
    assert program.max_actions == MAX_ACTIONS
    script(["teleport to outside", "%%%", "look around"])
    result = Executor(benchmark=bench, program=program, lm=make_lm(), step_cap=3, progress=False,
                      keep_traces=True).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None, r.error
    trace = result.traces[r.task_id]
    calls = trace.nodes(kind="module")
    actions = [n["action"] for n in trace.nodes(kind="env")[1:]]
    assert actions[0] == "teleport to outside"  # not listed in the kitchen (teleport to a task room only)
    assert calls[0]["parsed"]["match"] == "free"
    assert calls[1].get("override", {}).get("reason") == "unparsable reply"  # '%%%' -> first untried action
    assert actions[2] == "look around" and len(actions) == 3 == r.steps
    assert "free_verbs" in calls[0]["inputs"] and len(calls[0]["inputs"]["actions"]) <= MAX_ACTIONS


@_sim
def test_focuses_the_task_names_are_played_unconfirmed_and_the_box_choice_is_confirmed(play_scripted):
    # use-thermometer dev 270, an agent that answers "1" to everything: the program goes to the kitchen, focuses
    # on the thermometer and takes it, returns to the substance, focuses on it, takes it and measures it, with no
    # confirm call for either focus (the task names both). Which box is the agent's choice, shown the reading: "1"
    # in both orders names a box, then "none of these", so no box is played.
    result, r, trace = play_scripted("sciworld/use-thermometer", ["1"] * 30, step_cap=10,
                                     program="twx_scaffolded")
    assert r.output["actions"][:7] == [
        "go to kitchen", "focus on thermometer", "pick up thermometer", "go to bathroom",
        "focus on unknown substance", "pick up unknown substance", "use thermometer on unknown substance"]
    assert r.details["raw_score"] == 92 and not r.success
    confirms = [n for n in trace.nodes(kind="module") if n["route"] == "twx.confirm"]
    measured = next(n for n in trace.nodes(kind="env") if n.get("action", "").startswith("use thermometer"))
    assert confirms and min(n["order"] for n in confirms) > measured["order"]  # none for the focuses
    prompt = confirms[0]["messages"][-1]["content"]
    assert "measures a temperature of" in prompt and "to green box" in prompt and "to blue box" in prompt
    assert not any(a.endswith(" box") and a.startswith("move ") for a in r.output["actions"])


# ------------------------------------------------------------------------------------------ with the real model
@pytest.mark.local_model
@pytest.mark.timeout(600)
@_sim
def test_one_dev_task_with_the_local_model(tmp_path):
    require_local_server()
    from nlgrad.config import load_settings
    from nlgrad.lm.client import LM

    bench = load_benchmark("sciworld/find-living-thing")
    program = load_program(bench.default_program, benchmark=bench)
    lm = LM(load_settings(cache_dir=tmp_path / "cache"))
    run = Executor(benchmark=bench, program=program, lm=lm, step_cap=3, progress=False, keep_traces=True,
                   timeout_s=600).run(bench.tasks("dev", 1))
    (r,) = run.results
    assert r.error is None, r.error
    assert 1 <= r.steps <= 3 and 0.0 <= r.score <= 1.0 and r.feedback.startswith("Task (find-living-thing)")
    calls = run.traces[r.task_id].nodes(kind="module", route="twx.act")
    assert 1 <= len(calls) <= 3 and all(n.get("completion_tokens", 0) > 0 for n in calls)
    assert all(n["prompt_tokens"] < 4000 for n in calls)  # the bounded action list keeps the prompt small
