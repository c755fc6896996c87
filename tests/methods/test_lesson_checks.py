"""Deterministic lesson checks: copied instance details and copied passages are not reusable lessons."""

from __future__ import annotations

from types import SimpleNamespace

from nlgrad.methods.lesson_checks import (copied_instance_details, copied_passage, foreign_script, instance_tokens,
                                          lesson_problem, meta_condition, narrated_runs, script_of, trace_text,
                                          workspace_instance_tokens)
from nlgrad.methods.rule_pool import ReflectorOp, RulePool, to_policy_ops
from nlgrad.policy import PolicyMemory
from nlgrad.runtime.trace import Trace

TWX_TRACE = ("You are in the kitchen. To the North you see a closed plain door. To the East you see the hallway. "
             "> move north  You cannot move there, the door is closed. > take coin  You take the coin.")
IFEVAL_FEEDBACK = ("Violated: keywords:frequency (relation=at least, keyword=synonyms, frequency=3): 'synonyms' "
                   "appears 1 times. Followed: detectable_format:title.")


def test_copied_observations_actions_and_feedback_are_passages():
    assert copied_passage("To the North you see a closed plain door.", TWX_TRACE) == \
        "to the north you see a closed plain door"
    assert copied_passage("take coin", TWX_TRACE) == "take coin"  # a short line copied whole is an action
    assert copied_passage("Keywords: synonyms, frequency (relation=at least, keyword=synonyms, frequency=3): "
                          "'synonyms' appears 1 times", IFEVAL_FEEDBACK)


def test_lessons_that_quote_a_few_words_are_kept():
    assert copied_passage("When a door is closed, open it before you try to move through it.", TWX_TRACE) == ""
    assert copied_passage("If you see the coin, take coin at once instead of exploring.", TWX_TRACE) == ""
    assert copied_passage("Count how often each required keyword appears before you answer.", IFEVAL_FEEDBACK) == ""
    assert copied_passage("", TWX_TRACE) == "" and copied_passage("take coin", "") == ""


def test_lesson_problem_names_what_was_copied():
    specific = instance_tokens({"a": "Where was Barack Obama born in 1961?", "b": "Who wrote Hamlet?"}, "")
    assert copied_instance_details("Obama questions need 1961.", specific) == ["1961"]
    assert "instance details: 1961" in lesson_problem("Answer 1961 for birth years.", specific=specific, source="")
    problem = lesson_problem("move north", specific=set(), source=TWX_TRACE)
    assert problem and "'move north'" in problem
    assert lesson_problem("Open closed doors before moving.", specific=specific, source=TWX_TRACE) is None


def test_trace_text_includes_agent_outputs_only_when_asked():
    trace = Trace("t1", "p")
    root = trace.add_node("input", "input", inputs={"q": "find the coin"})
    trace.add_node("module", "game.act", parents=[root], output="move north")
    trace.add_node("env", "env.step", parents=[root], action="move north", observation="You see a coin.")
    assert "move north" not in trace_text(trace) and "You see a coin." in trace_text(trace)
    assert trace_text(trace, outputs=True).count("move north") == 2


def test_a_task_and_its_trace_are_one_document():
    """A name from one task's input is specific to that task even though the task's trace repeats it."""
    tasks = [SimpleNamespace(id=f"t{i}", inputs={"prompt": text}) for i, text in
             enumerate(["Write a haiku about Gujarat without commas.", "Write a riddle in at least 400 words.",
                        "Write 400 words about Kyoto without commas."])]
    traces = []
    for task in tasks[:2]:
        trace = Trace(task.id, "p")
        trace.add_node("input", "input", inputs=task.inputs)
        traces.append(trace)
    ws = SimpleNamespace(train_tasks=tasks, program=SimpleNamespace(routes=[]))
    specific = workspace_instance_tokens(ws, traces, general_text="")
    assert {"gujarat", "kyoto"} <= specific and "400" not in specific  # 400 is in two tasks
    assert copied_instance_details("Add a comma after Gujarat in the haiku.", specific) == ["gujarat"]
    # a number only one task's feedback states is that task's ("at least 336 words" from the 1.5B on ifeval)
    results = [SimpleNamespace(task_id="t1", feedback="violated: number_words: response has 336 words"),
               SimpleNamespace(task_id="t2", feedback="violated: number_words: response has 120 words"),
               SimpleNamespace(task_id="t0", feedback=None)]
    with_feedback = workspace_instance_tokens(ws, traces, results=results, general_text="")
    assert {"336", "120"} <= with_feedback and "336" not in specific
    assert copied_instance_details("Always write at least 336 words.", with_feedback) == ["336"]


def test_jerp_drops_copied_rules_before_they_reach_the_pool():
    pool = RulePool(PolicyMemory.model_validate({"program": "p", "routes": {"game.act": [
        {"text": "Open doors before moving."}]}}))
    proposed = [ReflectorOp(op="ADD", route="game.act", text="To the North you see a closed plain door."),
                ReflectorOp(op="EDIT", id="game.act#1", text="move north"),
                ReflectorOp(op="ADD", route="game.act", text="When a door blocks the way, open it first.")]
    check = lambda text: lesson_problem(text, specific=set(), source=TWX_TRACE)  # noqa: E731
    ops, dropped = to_policy_ops(proposed, pool, routes=["game.act"], trace_ids=["t1"], text_problem=check)
    assert [o.text for o in ops] == ["When a door blocks the way, open it first."]
    assert len(dropped) == 2 and all("copies a passage" in d["dropped"] for d in dropped)
    unchecked, _ = to_policy_ops(proposed, pool, routes=["game.act"], trace_ids=["t1"])
    assert len(unchecked) == 3


def test_lines_that_narrate_the_runs_are_named():
    assert narrated_runs("For example, in the first run, the word 'synonyms' appears 0 times.") == "in the first run"
    assert narrated_runs("In this case the agent failed to open the door.") == "In this case"
    assert narrated_runs("It failed in example 2 because it used commas.") == "example 2"
    assert narrated_runs("When the input forbids commas, write none in any example you give.") == ""
    assert narrated_runs("Open a closed door before you move through it.") == ""
    assert lesson_problem("In these runs the door was closed.", specific=set(), source="") == \
        "narrates the runs instead of stating a lesson: 'In these runs'"


def test_a_quoted_word_of_one_task_is_an_instance_detail():
    # seen on ifeval x 1.5B: "ensure that the word synonyms appears at least 3 times" from one task's keyword
    docs = {"a": 'Write an essay. The word "synonyms" should appear at least 3 times. Add a title.',
            "b": "Write a poem with a title. Do not use the word 'title' more than twice.", "c": "Describe Rome."}
    specific = instance_tokens(docs, "Follow every instruction.")
    assert "'synonyms'" in specific and "'title'" not in specific  # "title" is a word of two documents
    assert copied_instance_details("Make sure the word synonyms appears often enough.", specific) == ["'synonyms'"]
    assert copied_instance_details("Wrap the title in double angular brackets.", specific) == []
    assert "'synonyms'" not in instance_tokens(docs, 'Never use the word "synonyms".')  # the program's own word


def test_conditions_about_the_run_are_named_and_jerp_drops_their_rules():
    # seen from the 1.5B reflector on ifeval: when "score == 0.00", when "if.respond"
    assert meta_condition("score == 0.00", ["if.respond"]) == "score =="
    assert meta_condition("the reward is 0", []) == "reward is 0"
    assert meta_condition("if.respond", ["if.respond"]) == "if.respond"
    assert meta_condition("the input asks for a score out of 10", ["if.respond"]) == ""
    assert meta_condition(None, ["if.respond"]) == ""
    # seen from the 1.5B NLPG optimizer on ifeval (compare run C): when "all runs that failed this way"
    assert meta_condition("all runs that failed this way", ["if.respond"]) == "runs that failed"
    assert meta_condition("the failed traces", []) == "failed traces"
    assert meta_condition("the request asks how to debug a failed build", ["if.respond"]) == ""
    pool = RulePool(PolicyMemory.model_validate({"program": "p", "routes": {"if.respond": []}}))
    proposed = [ReflectorOp(op="ADD", route="if.respond", text="Answer in the language asked.", when="score == 0.00"),
                ReflectorOp(op="ADD", route="if.respond", text="Write no commas at all.", when="commas are forbidden")]
    ops, dropped = to_policy_ops(proposed, pool, routes=["if.respond"], trace_ids=["t1"])
    assert [o.text for o in ops] == ["Write no commas at all."]
    assert dropped[0]["dropped"] == "its condition is about the run, not the input: 'score =='"


def test_a_rule_in_another_script_than_the_instructions_is_not_a_lesson():
    # seen from the 1.5B JERP reflector on ifeval: a garbled Devanagari fragment, accepted by a lucky gate
    instructions = "Follow every instruction in the request exactly."
    assert script_of("कौच्य-श्रेन्...") == "DEVANAGARI" and script_of("Use no commas.") == "LATIN"
    assert lesson_problem("कौच्य-श्रेन्...", specific=set(), source="", instructions=instructions) == \
        "written in devanagari script, not in the language of the program's instructions"
    assert lesson_problem("Write the whole answer in Hindi when asked.", specific=set(), source="",
                          instructions=instructions) is None
    assert foreign_script("कौच्य-श्रेन्...", "") == ""  # no instructions known: no verdict
