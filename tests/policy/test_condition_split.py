"""An entry states its condition once: in ``when``, not again at the head of its text or run into its text."""

from nlgrad.policy import PolicyMemory
from nlgrad.policy.condition_split import separate_condition
from nlgrad.policy.ops import AddOp
from nlgrad.policy.render import render_line
from nlgrad.policy.update import apply_update


def test_text_that_repeats_its_condition_loses_the_repetition():
    text, when = separate_condition("When writing a song, always use short lines.", "writing a song")
    assert (text, when) == ("Always use short lines.", "writing a song")


def test_condition_that_runs_into_the_text_is_cut_where_the_text_begins():
    lesson = "Always repeat the request exactly as it is, including the punctuation."
    text, when = separate_condition(lesson, "an input asks for a repeated request, " + lesson)
    assert (text, when) == (lesson, "an input asks for a repeated request")


def test_distinct_condition_and_text_are_left_alone():
    assert separate_condition("Use no commas.", "the task forbids commas") == ("Use no commas.",
                                                                              "the task forbids commas")
    assert separate_condition("When in doubt, look.", "a door is closed") == ("When in doubt, look.",
                                                                              "a door is closed")
    assert separate_condition("When writing a song", "writing a song") == ("When writing a song", "writing a song")


def test_learned_entry_renders_its_condition_once():
    op = AddOp(route="if.respond", text="When writing a song, always use short lines.", when="writing a song")
    memory = PolicyMemory(program="ifeval", routes={"if.respond": []})
    new, _report = apply_update(memory, [op])
    [entry] = new.by_route["if.respond"]
    assert render_line(entry) == "- When writing a song, always use short lines."


def test_edit_that_runs_the_text_into_the_condition_keeps_them_apart():
    memory = PolicyMemory(program="ifeval", routes={"if.respond": []})
    memory, _ = apply_update(memory, [AddOp(route="if.respond", text="Use no commas.")])
    lesson = "Write every sentence without commas."
    edit = {"op": "edit", "id": "if.respond#1", "text": lesson, "when": "the task forbids commas, " + lesson}
    new, _report = apply_update(memory, [edit])
    [entry] = new.by_route["if.respond"]
    assert (entry.text, entry.when) == (lesson, "the task forbids commas")


def test_an_example_entry_keeps_its_worked_text():
    from nlgrad.policy.schema import EntryKind

    worked = "When writing a song, input: a song -> output: la la"
    assert separate_condition(worked, "writing a song", EntryKind.example) == (worked, "writing a song")
