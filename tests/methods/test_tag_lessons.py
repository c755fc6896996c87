"""Failure tags from the metric: failures grouped by (route, tag), one lesson per recurring group, its condition the
group's discriminative input words; NLPG learns such a conditional lesson without a critic."""

from __future__ import annotations

import json

from fake_lm import UPPER_RULE, ShoutBenchmark, ShoutProgram, agent_reply, install_fake_lm, serve_toy

from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.nlpg.failure_groups import discriminative_patterns, group_failures
from nlgrad.methods.nlpg.tag_lessons import feedback_about
from nlgrad.optimize import run_optimize
from nlgrad.policy import PolicyStore
from nlgrad.runtime.executor import TaskResult
from nlgrad.runtime.protocols import MetricResult
from nlgrad.runtime.trace import Trace


def test_discriminative_patterns_separate_the_group_from_the_others():
    group = ["Write a poem and do not use any commas.", "Describe Paris without commas please.",
             "List three fruits; commas are not allowed."]
    others = ["Write a poem in all lowercase.", "Describe Rome in JSON.", "List three birds."]
    assert discriminative_patterns(group, others)[0] == "commas"
    assert "write" not in discriminative_patterns(group, others)  # in the others too
    assert discriminative_patterns(["a b", "c d"], ["e"]) == []  # nothing recurs: the lesson stays unconditional


def _trace(task_id: str, route: str, text: str, output: str) -> Trace:
    trace = Trace(task_id=task_id)
    node = trace.add_node("module", route, inputs={"prompt": text}, messages=[])
    trace.update_node(node, output=output)
    return trace


def test_failures_are_grouped_by_the_output_route_and_tag_largest_first():
    results = [
        TaskResult("t1", "train", None, 0.5, False, details={"tags": ["missed:no_comma", "missed:title"]}),
        TaskResult("t2", "train", None, 0.0, False, details={"tags": ["missed:no_comma"]}),
        TaskResult("t3", "train", None, 1.0, True, details={"tags": []}),
        TaskResult("t4", "train", None, 0.0, False, error="boom", details={"tags": ["missed:no_comma"]}),
    ]
    traces = {r.task_id: _trace(r.task_id, "if.respond", f"prompt {r.task_id}", "out") for r in results}
    groups = group_failures(results, traces)
    assert [(g.tag, g.task_ids) for g in groups] == [("missed:no_comma", ["t1", "t2"]), ("missed:title", ["t1"])]
    assert groups[0].route == "if.respond" and groups[0].inputs == ["prompt t1", "prompt t2"]


class TaggedShout(ShoutBenchmark):
    """The toy benchmark whose metric also names the kind of failure."""

    def metric(self, task, output, episode=None):
        result = super().metric(task, output, episode)
        return MetricResult(score=result.score, success=result.success, feedback=result.feedback,
                            details={"tags": [] if result.success else ["missed:uppercase"]})


def test_nlpg_learns_one_conditional_lesson_per_recurring_tag_without_a_critic(settings, monkeypatch, tmp_path):
    def reply(messages):
        system, user = messages[0]["content"], messages[-1]["content"]
        if "The kind of failure: missed:uppercase" in user:
            return json.dumps({"text": UPPER_RULE, "when": ""})
        assert "what_went_wrong" not in user and '"corrections"' not in user  # no critic, no proposer call
        return agent_reply(system, user)

    calls = install_fake_lm(monkeypatch, reply)
    serve_toy(monkeypatch, TaggedShout(), ShoutProgram)
    config = OptimizeConfig(benchmark="shout", iterations=1, batch=4, val=4, test_n=0,
                            method_options={"tag_groups": True, "critic": False})
    outcome = run_optimize(config, settings, tmp_path / "pol", progress=False)
    assert outcome.state.history[0].accepted
    (entry,) = PolicyStore(tmp_path / "pol").load(2).active_entries("shout.say")
    assert entry.text == UPPER_RULE and entry.match == ["word", "number"]  # what every failed input shared
    assert len(entry.provenance.trace_ids) == 4
    groups = json.loads((tmp_path / "pol/run/iter-0001/tag_groups.json").read_text())
    assert groups["groups"][0]["tag"] == "missed:uppercase" and groups["groups"][0]["support"] == 4
    assert sum("The kind of failure" in m[-1]["content"] for m in calls) == 1  # one lesson for the one group


def test_lesson_condition_needs_two_distinct_sources():
    from nlgrad.methods.conditions import lesson_condition

    others = ["write a poem", "tell a story"]
    assert lesson_condition(["add commas please", "use commas here"], others) == ["commas"]
    assert lesson_condition(["add commas please", "add commas please"], others) == []  # one distinct input
    assert "commas" in lesson_condition(["add commas please"], others, min_sources=1)


def test_a_lesson_writer_reads_the_feedback_lines_of_its_kind():
    feedback = ("Followed 1 of 3 instructions (strict).\n"
                "violated: change_case:capital_word_frequency (capital_frequency=16): response has 1 all-capital words\n"
                "violated: punctuation:no_comma: response contains 14 commas\nfollowed: keywords:frequency")
    assert feedback_about(feedback, "missed:punctuation:no_comma") == \
        "violated: punctuation:no_comma: response contains 14 commas"
    assert feedback_about(feedback, "answer:sentence_not_span") == feedback  # no line names it: all of it


def test_a_rejected_tag_lesson_is_dropped_not_shown_to_the_writer(settings, monkeypatch, tmp_path):
    useless = "Think about the topic of the input before you write the reply."

    def reply(messages):
        system, user = messages[0]["content"], messages[-1]["content"]
        if "The kind of failure: missed:uppercase" in user:
            assert useless not in user  # a small writer copies the lessons it is shown
            return json.dumps({"text": useless, "when": ""})
        return agent_reply(system, user)

    install_fake_lm(monkeypatch, reply)
    serve_toy(monkeypatch, TaggedShout(), ShoutProgram)
    config = OptimizeConfig(benchmark="shout", iterations=2, batch=4, val=4, test_n=0,
                            method_options={"tag_groups": True, "critic": False})
    outcome = run_optimize(config, settings, tmp_path / "pol", progress=False)
    assert [h.accepted for h in outcome.state.history] == [False, False]
    dropped = json.loads((tmp_path / "pol/run/iter-0002/aggregate.json").read_text())["dropped"]
    assert [d["reason"] for d in dropped] == [f"repeats a lesson the gate rejected: {useless}"]


def test_a_group_no_input_pattern_separates_gets_no_lesson_unless_asked():
    from nlgrad.methods.nlpg.failure_groups import FailureGroup
    from nlgrad.methods.nlpg.tag_lessons import TagLessonWriter

    class OneLesson:
        calls = 0

        def structured(self, role, messages, schema, max_tokens):
            self.calls += 1
            return schema(text="Write the whole reply in the language the input names.", when="")

    group = FailureGroup(route="if.respond", tag="missed:language:response_language", task_ids=["a", "b"],
                         inputs=["Answer in Korean: what is tea?", "Answer in Hindi: what is rain?"],
                         outputs=["Tea is a drink.", "Rain is water."], feedback=["violated", "violated"])
    others = ["Answer in Korean: what is snow?", "Answer in Hindi: what is a cat?"]
    lm = OneLesson()
    writer = TagLessonWriter(lm)
    assert writer.write(group, other_inputs=others, instructions="") is None and lm.calls == 0
    assert "no input pattern separates the group" in writer.skipped[0]["reason"]
    lesson = writer.write(group, other_inputs=others, instructions="", unconditional=True)
    assert lesson is not None and lesson.match == [] and lm.calls == 1


class LoudQuietShout(ShoutBenchmark):
    """Even tasks are "loud ...", odd ones "quiet ..."; a failure is tagged with its kind."""

    def task(self, split, i, k):
        task = super().task(split, i, k)
        kind = "loud" if i % 2 == 0 else "quiet"
        return type(task)(id=task.id, split=split, inputs={"text": f"{kind} {task.inputs['text']}"},
                          gold=f"{kind.upper()} {task.gold}")

    def metric(self, task, output, episode=None):
        result = super().metric(task, output, episode)
        kind = task.inputs["text"].split()[0]
        return MetricResult(score=result.score, success=result.success, feedback=result.feedback,
                            details={"tags": [] if result.success else [f"missed:{kind}"]})


def test_each_learned_entry_carries_the_traces_of_its_own_group(settings, monkeypatch, tmp_path):
    def reply(messages):
        system, user = messages[0]["content"], messages[-1]["content"]
        lessons = {"loud": "Write loud text in UPPERCASE letters.",
                   "quiet": "Quiet inputs still need an UPPERCASE reply, every character."}
        for kind, lesson in lessons.items():
            if f"The kind of failure: missed:{kind}" in user:
                return json.dumps({"text": lesson, "when": ""})
        return agent_reply(system, user)

    install_fake_lm(monkeypatch, reply)
    serve_toy(monkeypatch, LoudQuietShout(), ShoutProgram)
    config = OptimizeConfig(benchmark="shout", iterations=1, batch=12, val=4, test_n=0,
                            method_options={"tag_groups": True, "critic": False, "similarity": "lexical"})
    outcome = run_optimize(config, settings, tmp_path / "pol", progress=False)
    assert outcome.state.history[0].accepted
    entries = {e.match[0]: e for e in PolicyStore(tmp_path / "pol").load(2).active_entries("shout.say")}
    assert sorted(entries) == ["loud", "quiet"]
    parity = {kind: {int(t.rsplit("/", 1)[1]) % 2 for t in entries[kind].provenance.trace_ids} for kind in entries}
    assert parity == {"loud": {0}, "quiet": {1}}  # loud tasks are the even ones


def test_a_long_or_run_related_condition_from_the_writer_is_dropped_with_a_note():
    from nlgrad.methods.nlpg.tag_lessons import usable_condition

    assert usable_condition("the input forbids commas", "if.respond") == ("the input forbids commas", "")
    # seen from the 1.5B on ifeval: a second lesson run into the condition, and a condition on the score
    long_when = ("you are writing a response to an input that asks for a lowercase response, make sure to follow "
                 "this lesson.")
    when, note = usable_condition(long_when, "if.respond")
    assert when is None and note.startswith("condition text dropped (over 15 words)")
    when, note = usable_condition("score == 0.00", "if.respond")
    assert when is None and "about the run" in note
    assert usable_condition(None, "if.respond") == (None, "")
