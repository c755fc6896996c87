"""The ``examples`` selection: each call sees the k examples nearest its input, as prior turns; the example bound."""

from nlgrad.policy import AddOp, EntryKind, PolicyBounds, PolicyMemory, apply_update
from nlgrad.policy.example_selection import NearestExamplesSelector, example_input
from nlgrad.policy.examples import format_example
from nlgrad.policy.schema import Selection
from nlgrad.policy.view import PolicyView
from nlgrad.text.embeddings import LexicalEmbedder

ROUTE = "intent.classify"
EXAMPLES = [("where is my new card", "card_arrival"), ("my card was stolen today", "lost_or_stolen_card"),
            ("what exchange rate do you use", "exchange_rate"), ("refund has not appeared yet", "Refund_not_showing_up")]


def memory(k=2, examples_as="turns"):
    ops = [AddOp(route=ROUTE, kind=EntryKind.example, text=format_example({"message": m}, label))
           for m, label in EXAMPLES] + [AddOp(route=ROUTE, text="Reply with the label only.")]
    start = PolicyMemory(program="intent_classify",
                         selection=Selection(kind="examples", k=k, examples_as=examples_as, embedder="lexical"))
    bounds = PolicyBounds(max_examples_per_route=10, max_entries_per_route=20, max_tokens_per_route=4000,
                          max_ops_per_update=10, max_edit_cost=10_000)
    return apply_update(start, ops, bounds)[0]


def test_each_call_sees_the_k_nearest_examples_as_turns_and_every_lesson_as_text():
    mem = memory(k=2)
    text, ids, turns = mem.render_call(ROUTE, "somebody stole my card")
    assert text == "- Reply with the label only."
    assert len(turns) == 2 and turns[-1] == ("my card was stolen today", "lost_or_stolen_card")  # nearest last
    assert len(ids) == 3  # two examples and the lesson, all recorded on the call
    assert mem.render_call(ROUTE, "what rate of exchange applies")[2][0][1] in ("exchange_rate", "card_arrival")


def test_examples_as_lines_keep_the_chosen_examples_in_the_text():
    mem = memory(k=1, examples_as="lines")
    text, _, turns = mem.render_call(ROUTE, "my refund has not appeared")
    assert turns == [] and "Output: Refund_not_showing_up" in text and "card_arrival" not in text


def test_the_demos_placement_and_the_policy_agree():
    mem = memory(k=2)
    assert PolicyView(mem).render_call(ROUTE, "where is my card") == mem.render_call(ROUTE, "where is my card")
    assert PolicyView(memory(k=2, examples_as="lines"), placement="demos").demos(ROUTE, "where is my card")


def test_selector_ranks_by_the_example_input_not_its_label():
    mem = memory()
    examples = [e for e in mem.active_entries(ROUTE) if e.kind == EntryKind.example]
    assert example_input(examples[0]) == "where is my new card"
    selector = NearestExamplesSelector(LexicalEmbedder().embed, k=1, name="lexical")
    assert selector.nearest(examples, "what exchange rate")[0][0] is examples[2]


def test_max_examples_per_route_is_a_bound_of_the_update():
    start = PolicyMemory(program="p")
    ops = [AddOp(route=ROUTE, kind=EntryKind.example, text=format_example({"m": f"x {i}"}, "y")) for i in range(5)]
    new, report = apply_update(start, ops, PolicyBounds(max_examples_per_route=3, max_ops_per_update=10))
    assert len(new.active_entries(ROUTE)) == 3
    assert [t.rule for t in report.trimmed] == ["max_examples_per_route"] * 2


def test_selection_round_trips_through_the_file(tmp_path):
    mem = memory()
    path = mem.save(tmp_path / "p.json")
    loaded = PolicyMemory.load(path)
    assert loaded.selection == mem.selection and loaded.examples_as_turns
