from __future__ import annotations

import pytest
from pydantic import ValidationError

from nlgrad.policy import (AddOp, DeleteOp, DownvoteOp, EditOp, LexicalSimilarity, MergeOp, PolicyBounds,
                           PolicyMemory, PolicyUpdateError, UpvoteOp, apply_update, count_tokens,
                           operations_json_schema, parse_operations, render_line, token_edit_distance)

LOOSE = PolicyBounds(max_entries_per_route=50, max_tokens_per_route=5000, max_ops_per_update=50, max_edit_cost=5000)


def base(n: int = 3, route: str = "r") -> PolicyMemory:
    return PolicyMemory(program="p", routes={route: [{"text": f"Rule number {i} says something distinct{' x' * i}."}
                                                     for i in range(1, n + 1)]})


def test_add_assigns_next_id_and_provenance(memory: PolicyMemory):
    new, report = apply_update(memory, [AddOp(route="twx.act", text="Look at the inventory first.",
                                               trace_ids=["t9"], reason="the agent never knew what it held")],
                               LOOSE, {"source": "nlgrad", "iteration": 4, "trace_ids": ["t1", "t2"]})
    entry = new.entries("twx.act")[-1]
    assert entry.id == "twx.act#3" and report.applied[0].entry_id == "twx.act#3"
    assert entry.provenance.model_dump() == {"source": "nlgrad", "iteration": 4, "revised_iteration": None,
                                             "trace_ids": ["t1", "t2", "t9"],
                                             "reason": "the agent never knew what it held"}
    assert report.applied[0].cost == count_tokens(render_line(entry))
    assert new.method == "nlgrad" and new.version == 0 and new.n_ops == 1
    assert len(memory.entries("twx.act")) == 2  # input untouched


def test_add_to_new_route(memory: PolicyMemory):
    new, _ = apply_update(memory, [{"op": "add", "route": "hotpot.hop2_query", "text": "Query the bridge entity."}],
                          LOOSE)
    assert new.routes() == ["hotpot.hop2_query", "twx.act", "twx.plan"]
    assert new.render("hotpot.hop2_query") == "- Query the bridge entity."


def test_edit_text_and_when_and_clearing_when(memory: PolicyMemory):
    new, report = apply_update(memory, [EditOp(id="twx.act#1", when="the room is empty"),
                                        EditOp(id="twx.act#2", text="Open every closed door.", when="a door is closed")],
                               LOOSE, {"iteration": 7})
    a, b = new.entries("twx.act")
    assert a.when == "the room is empty" and a.text == memory.entries("twx.act")[0].text
    assert (b.text, b.when, b.provenance.revised_iteration) == ("Open every closed door.", "a door is closed", 7)
    old_line, new_line = render_line(memory.entries("twx.act")[1]), render_line(b)
    assert report.applied[1].cost == token_edit_distance(old_line, new_line)
    cleared, _ = apply_update(new, [EditOp(id="twx.act#2", when="")], LOOSE)
    assert cleared.entries("twx.act")[1].when is None


def test_delete_removes_entry_and_never_reuses_its_id(memory: PolicyMemory):
    new, report = apply_update(memory, [DeleteOp(id="twx.act#2"), DeleteOp(id="twx.plan#1")], LOOSE)
    assert [e.id for e in new.entries("twx.act")] == ["twx.act#1"]
    assert new.routes() == ["twx.act"] and new.render("twx.plan") == ""
    again, _ = apply_update(new, [AddOp(route="twx.act", text="A brand new idea about keys.")], LOOSE)
    assert again.entries("twx.act")[-1].id == "twx.act#3"
    assert report.total_cost == sum(a.cost for a in report.applied) > 0


def test_votes_change_counters_and_cost_nothing(memory: PolicyMemory):
    new, report = apply_update(memory, [UpvoteOp(id="twx.act#2", amount=3), DownvoteOp(id="twx.act#1")],
                               PolicyBounds(max_ops_per_update=1))
    a, b = new.entries("twx.act")
    assert (a.helpful, a.harmful, b.helpful, b.harmful) == (0, 1, 3, 0)
    assert report.total_cost == 0 and report.text_ops == 0 and len(report.applied) == 2
    # utility orders rendering: #2 (utility 3) before #1 (utility -1)
    assert new.render("twx.act").splitlines()[0] == "- Open closed doors before leaving a room."


def test_merge_combines_counters_and_removes_sources():
    m = base(3)
    m, _ = apply_update(m, [UpvoteOp(id="r#1"), UpvoteOp(id="r#2", amount=2), DownvoteOp(id="r#3")], LOOSE)
    new, report = apply_update(m, [MergeOp(ids=["r#2", "r#3"], text="One merged rule.", trace_ids=["t"])], LOOSE)
    assert [e.id for e in new.entries("r")] == ["r#1", "r#2"]
    merged = new.entries("r")[1]
    assert (merged.text, merged.helpful, merged.harmful, merged.support) == ("One merged rule.", 2, 1, 2)
    assert merged.provenance.trace_ids == ["t"]
    assert report.applied[0].entry_id == "r#2" and report.applied[0].cost > 0


def test_merge_defaults_to_first_text_and_rejects_cross_route(memory: PolicyMemory):
    new, _ = apply_update(memory, [MergeOp(ids=["twx.act#2", "twx.act#1"])], LOOSE)
    assert [e.text for e in new.entries("twx.act")] == ["Open closed doors before leaving a room."]
    same, report = apply_update(memory, [MergeOp(ids=["twx.act#1", "twx.plan#1"])], LOOSE)
    assert report.trimmed[0].rule == "invalid" and "span routes" in report.trimmed[0].reason
    assert same.by_route == memory.by_route


def test_near_duplicate_add_is_merged_not_added(memory: PolicyMemory):
    new, report = apply_update(memory, [AddOp(route="twx.act", text="Open closed doors before leaving the room!",
                                              trace_ids=["t5"])], LOOSE)
    assert len(new.entries("twx.act")) == 2
    dup = report.merged_duplicates[0]
    assert dup.into == "twx.act#2" and dup.similarity >= LOOSE.dedupe_threshold
    target = new.entries("twx.act")[1]
    assert target.support == 2 and target.provenance.trace_ids == ["t5"]
    assert report.text_ops == 0 and report.total_cost == 0 and report.changed


def test_duplicates_within_one_update_are_merged(memory: PolicyMemory):
    ops = [AddOp(route="twx.act", text="Check the inventory for keys."),
           AddOp(route="twx.act", text="check the inventory for keys")]
    new, report = apply_update(memory, ops, LOOSE)
    assert len(new.entries("twx.act")) == 3 and report.merged_duplicates[0].into == "twx.act#3"


def test_lexical_similarity_is_symmetric_and_bounded():
    sim = LexicalSimilarity()
    a, b = "Open the door first.", "First, open the door."
    assert sim.similarity(a, b) == sim.similarity(b, a)
    assert sim.similarity(a, a) == 1.0 and sim.similarity(a, "Eat cake.") == 0.0


def test_custom_similarity_backend_plugs_in(memory: PolicyMemory):
    class Always:
        def similarity(self, a: str, b: str) -> float:
            return 1.0

    _, report = apply_update(memory, [AddOp(route="twx.act", text="Totally different.")], LOOSE, similarity=Always())
    assert report.merged_duplicates and not report.applied


def test_max_ops_keeps_first_ops_in_given_order():
    ops = [AddOp(route="r", text=f"Distinct idea {w}.") for w in ("alpha", "beta", "gamma", "delta")]
    new, report = apply_update(base(0), ops, PolicyBounds(max_ops_per_update=2))
    assert [a.index for a in report.applied] == [0, 1]
    assert [(t.index, t.rule) for t in report.trimmed] == [(2, "max_ops_per_update"), (3, "max_ops_per_update")]
    assert len(new.entries("r")) == 2


def test_invalid_ops_do_not_use_up_the_budget():
    ops = [{"op": "delete", "id": "r#99"}, {"op": "edit", "id": "r#1"}, {"op": "frobnicate"}, "nonsense",
           AddOp(route="r", text="Valid addition here.")]
    new, report = apply_update(base(1), ops, PolicyBounds(max_ops_per_update=1))
    assert [t.rule for t in report.trimmed] == ["invalid"] * 4
    assert "unknown entry id" in report.trimmed[0].reason
    assert "edit needs" in report.trimmed[1].reason
    assert report.applied[0].index == 4 and len(new.entries("r")) == 2


def test_no_op_edit_is_reported():
    m = base(1)
    _, report = apply_update(m, [EditOp(id="r#1", text=m.entries("r")[0].text)], LOOSE)
    assert report.trimmed[0].rule == "invalid" and "unchanged" in report.trimmed[0].reason


def test_max_edit_cost_trims_expensive_op_but_later_cheap_ops_apply():
    long_text = "This is a long correction with many many words in it to be expensive."
    ops = [AddOp(route="r", text="Short one."), AddOp(route="r", text=long_text), AddOp(route="r", text="Tiny tip.")]
    bounds = PolicyBounds(max_edit_cost=12)
    new, report = apply_update(base(0), ops, bounds)
    assert [a.index for a in report.applied] == [0, 2]
    assert report.trimmed[0].index == 1 and report.trimmed[0].rule == "max_edit_cost"
    assert report.total_cost <= 12


def test_edit_cost_of_an_edit_is_token_distance():
    m = PolicyMemory(program="p", routes={"r": [{"text": "Open the red door."}]})
    _, ok = apply_update(m, [EditOp(id="r#1", text="Open the blue door.")], PolicyBounds(max_edit_cost=1))
    assert ok.applied[0].cost == 1
    _, trimmed = apply_update(m, [EditOp(id="r#1", text="Close the blue gate.")], PolicyBounds(max_edit_cost=2))
    assert trimmed.trimmed[0].rule == "max_edit_cost" and "3" in trimmed.trimmed[0].reason


def test_max_entries_trims_add_when_nothing_has_lower_utility():
    m = base(3)
    new, report = apply_update(m, [AddOp(route="r", text="A fourth quite different idea.")],
                               PolicyBounds(max_entries_per_route=3))
    assert report.trimmed[0].rule == "max_entries_per_route" and len(new.entries("r")) == 3


def test_max_entries_evicts_lowest_utility_entry():
    m, _ = apply_update(base(3), [DownvoteOp(id="r#2", amount=2), DownvoteOp(id="r#3")], LOOSE)
    new, report = apply_update(m, [AddOp(route="r", text="A fourth quite different idea.")],
                               PolicyBounds(max_entries_per_route=3))
    assert report.applied[0].evicted == ["r#2"] and report.evicted == ["r#2"]
    assert [e.id for e in new.entries("r")] == ["r#1", "r#3", "r#4"]
    removed = count_tokens(render_line(m.entries("r")[1]))
    assert report.applied[0].cost == count_tokens(render_line(new.entries("r")[-1])) + removed


def test_max_tokens_evicts_or_trims():
    m = PolicyMemory(program="p", routes={"r": [{"text": "one two three four five"},
                                                {"text": "six seven eight nine ten"}]})
    per_line = count_tokens(render_line(m.entries("r")[0]))
    bounds = PolicyBounds(max_tokens_per_route=2 * per_line + 2)
    _, report = apply_update(m, [AddOp(route="r", text="alpha beta gamma delta epsilon")], bounds)
    assert report.trimmed[0].rule == "max_tokens_per_route"
    bad, _ = apply_update(m, [DownvoteOp(id="r#2")], LOOSE)
    new, report = apply_update(bad, [AddOp(route="r", text="alpha beta gamma delta epsilon")], bounds)
    assert report.applied[0].evicted == ["r#2"] and new.tokens("r") <= bounds.max_tokens_per_route
    # an entry larger than the route budget never fits, and evicts nothing
    huge, report = apply_update(bad, [AddOp(route="r", text=" ".join(["w"] * 40))], bounds)
    assert report.trimmed[0].rule == "max_tokens_per_route" and len(huge.entries("r")) == 2


def test_edit_and_merge_may_not_grow_a_route_past_max_tokens():
    m = PolicyMemory(program="p", routes={"r": [{"text": "short"}, {"text": "tiny"}]})
    bounds = PolicyBounds(max_tokens_per_route=8)
    _, report = apply_update(m, [EditOp(id="r#1", text="a much longer text than allowed here")], bounds)
    assert report.trimmed[0].rule == "max_tokens_per_route"
    _, report = apply_update(m, [MergeOp(ids=["r#1", "r#2"], text="a much longer text than is allowed here")], bounds)
    assert report.trimmed[0].rule == "max_tokens_per_route"
    # shrinking an over-budget route is always allowed
    over = PolicyMemory(program="p", routes={"r": [{"text": " ".join(["w"] * 20)}]})
    _, report = apply_update(over, [EditOp(id="r#1", text="w w w w w w w w w w w w w w w")], bounds)
    assert report.applied


def test_apply_update_is_deterministic(memory: PolicyMemory):
    ops = [{"op": "add", "route": "twx.act", "text": "Examine objects before taking them."},
           {"op": "edit", "id": "twx.act#1", "text": "Explore unexplored exits."},
           {"op": "upvote", "id": "twx.plan#1"}, {"op": "merge", "ids": ["twx.act#1", "twx.act#2"]},
           {"op": "add", "route": "twx.act", "text": "Examine objects before taking them!"}]
    runs = [apply_update(memory, ops, PolicyBounds(max_ops_per_update=3), {"iteration": 1}) for _ in range(3)]
    assert all(r[0] == runs[0][0] and r[1] == runs[0][1] for r in runs)
    assert runs[0][0].to_json() == runs[1][0].to_json()


def test_every_op_is_accounted_for(memory: PolicyMemory):
    ops = [{"op": "add", "route": "twx.act", "text": f"Idea {i} about something {i}."} for i in range(6)]
    ops += [{"op": "upvote", "id": "twx.act#1"}, {"op": "bad"}]
    _, report = apply_update(memory, ops, PolicyBounds(max_ops_per_update=2))
    indices = sorted([a.index for a in report.applied] + [t.index for t in report.trimmed]
                     + [d.index for d in report.merged_duplicates])
    assert indices == list(range(len(ops)))
    assert "trimmed" in report.summary()


def test_lineage_fields_of_result():
    m = base(1).model_copy(update={"version": 5, "parent": 4})
    new, _ = apply_update(m, [], LOOSE, {"source": "gepa"})
    assert (new.version, new.parent, new.method, new.created) == (0, 5, "gepa", None)


def test_parse_operations_and_schema():
    ops = parse_operations('[{"op": "add", "route": "r", "text": "x", "rationale": "ignored"}, {"op": "delete", "id": "r#1"}]')
    assert isinstance(ops[0], AddOp) and isinstance(ops[1], DeleteOp)
    with pytest.raises(PolicyUpdateError, match="0.add.text"):
        parse_operations([{"op": "add", "route": "r"}])
    with pytest.raises(PolicyUpdateError):
        parse_operations([{"op": "upvote", "id": "r#1", "amount": 0}])
    schema = operations_json_schema()
    assert schema["type"] == "array"
    with pytest.raises(ValidationError):
        MergeOp(ids=["a#1", "a#1"])


def test_bounds_are_validated():
    with pytest.raises(ValidationError):
        PolicyBounds(max_ops_per_update=0)
    with pytest.raises(ValidationError):
        PolicyBounds(dedupe_threshold=1.5)
    with pytest.raises(ValidationError):
        PolicyBounds(max_entries=3)  # unknown field


def test_raw_json_proposal_is_accepted(memory: PolicyMemory):
    new, report = apply_update(memory, '[{"op": "upvote", "id": "twx.act#1"}, {"op": "nope"}]')
    assert new.entries("twx.act")[0].helpful == 1 and report.trimmed[0].rule == "invalid"
    with pytest.raises(PolicyUpdateError):
        apply_update(memory, "not json")
    with pytest.raises(PolicyUpdateError):
        apply_update(memory, '{"op": "add"}')


def test_empty_memory_is_truthy_and_counts_entries():
    empty = PolicyMemory(program="p")
    assert empty and empty.n_entries() == 0 and empty.routes() == [] and empty.render("x") == ""
    m = PolicyMemory(program="p", routes={"r": [{"text": "a"}, {"text": "b", "status": "disabled"}]})
    assert m.n_entries() == 1 and m.n_entries(active_only=False) == 2
