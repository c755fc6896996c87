"""JERP's rule pool: reflector ops (ADD / EDIT / UPVOTE / DOWNVOTE / MERGE), presence votes, pruning, references."""

import pytest
from pydantic import ValidationError

from nlgrad.methods.rule_pool import (Presence, ReferenceStore, Reflection, ReflectorOp, RulePool,
                                      apply_pool_update, combine_votes, is_placeholder, match_route, presence_votes, prune_ops,
                                      to_policy_ops)
from nlgrad.policy import (AddOp, DeleteOp, DownvoteOp, EditOp, MergeOp, PolicyBounds, PolicyMemory,
                           UpdateProvenance, UpvoteOp)

R = "game.act"


def pool_memory(utilities=(0, 0, 0), route=R) -> PolicyMemory:
    rules = [{"text": f"Rule number {name} about doors and keys.", "kind": "rule",
              "helpful": max(u, 0), "harmful": max(-u, 0)} for name, u in zip("ABCDEFGHIJ", utilities)]
    return PolicyMemory.model_validate({"program": "p", "routes": {route: rules}})


def prov():
    return UpdateProvenance(source="jerp", iteration=1)


def test_reflector_reply_parses_loosely():
    reply = Reflection.model_validate({"ops": [{"op": "add", "text": "  Open   doors first. ", "when": ""},
                                               {"op": "Merge", "ids": "game.act#1, game.act#2", "text": "x"}]})
    assert reply.ops[0].op == "ADD" and reply.ops[0].text == "Open doors first." and reply.ops[0].when is None
    assert reply.ops[1].ids == ["game.act#1", "game.act#2"]
    with pytest.raises(ValueError):
        ReflectorOp(op="PROMOTE")


def test_each_reflector_op_maps_to_a_policy_op_and_bad_ones_are_dropped_with_reasons():
    pool = RulePool(pool_memory())
    proposed = [ReflectorOp(op="ADD", text="Read the recipe before cooking anything."),
                ReflectorOp(op="EDIT", id="game.act#1", text="Open every closed door you pass."),
                ReflectorOp(op="UPVOTE", id="game.act#2"), ReflectorOp(op="DOWNVOTE", id="game.act#3"),
                ReflectorOp(op="MERGE", ids=["game.act#1", "game.act#2"], text="Doors and keys: open, then take."),
                ReflectorOp(op="UPVOTE", id="game.act#99"), ReflectorOp(op="ADD", text="short"),
                ReflectorOp(op="MERGE", ids=["game.act#1"]), ReflectorOp(op="EDIT", id="game.act#2"),
                ReflectorOp(op="EDIT", id="examine toaster", text="Turn the toaster on before using it.")]
    ops, dropped = to_policy_ops(proposed, pool, routes=[R], trace_ids=["t1"], default_route=R)
    assert [type(o) for o in ops] == [AddOp, EditOp, UpvoteOp, DownvoteOp, MergeOp, AddOp]
    assert ops[5].text == "Turn the toaster on before using it." and "kept as ADD" in ops[5].reason
    assert ops[0].kind.value == "rule" and ops[0].route == R and all(o.trace_ids == ["t1"] for o in ops)
    reasons = [d["dropped"] for d in dropped]
    assert "unknown rule" in reasons[0] and "usable rule text" in reasons[1] and "two known" in reasons[2]
    assert "without a new text" in reasons[3]
    multi, dropped = to_policy_ops([ReflectorOp(op="ADD", text="A rule with no route given.")], pool,
                                   routes=[R, "game.plan"], trace_ids=[], default_route=None)
    assert multi == [] and "no known route" in dropped[0]["dropped"]
    cross = PolicyMemory.model_validate({"program": "p", "routes": {
        R: [{"text": "Rule on the actor route."}], "game.plan": [{"text": "Rule on the planner route."}]}})
    _, dropped = to_policy_ops([ReflectorOp(op="MERGE", ids=["game.act#1", "game.plan#1"])], RulePool(cross),
                               routes=[R, "game.plan"], trace_ids=[])
    assert "different routes" in dropped[0]["dropped"]


def test_pool_update_applies_add_edit_votes_and_merge():
    memory = pool_memory()
    ops = [AddOp(route=R, text="Read the recipe before cooking anything.", kind="rule"),
           EditOp(id="game.act#3", text="Rule C, rewritten to be clearer about keys."),
           UpvoteOp(id="game.act#1"), UpvoteOp(id="game.act#1"), DownvoteOp(id="game.act#2"),
           MergeOp(ids=["game.act#1", "game.act#2"], text="Open doors, then take keys.")]
    new, report, prune = apply_pool_update(memory, ops, bounds=PolicyBounds(), capacity=8, provenance=prov())
    texts = {e.id: (e.text, e.utility) for e in new.active_entries(R)}
    # votes net per rule first (#1: +2, #2: -1), then the merge sums the counters into #1: 2 - 1 = 1
    assert texts["game.act#1"] == ("Open doors, then take keys.", 1) and "game.act#2" not in texts
    assert texts["game.act#3"][0].startswith("Rule C, rewritten") and texts["game.act#4"][1] == 0
    assert not prune.applied and new.n_ops == len(report.applied)


def test_combine_votes_nets_votes_per_rule():
    votes = combine_votes([UpvoteOp(id="r#2", trace_ids=["a"]), DownvoteOp(id="r#2", amount=3, trace_ids=["b"]),
                           UpvoteOp(id="r#1"), DownvoteOp(id="r#1"), AddOp(route="r", text="Some new rule here.")])
    assert [type(v) for v in votes] == [DownvoteOp, AddOp]
    assert votes[0].id == "r#2" and votes[0].amount == 2 and votes[0].trace_ids == ["a", "b"]


def test_rules_repeatedly_present_in_failures_lose_utility():
    records = [Presence("f1", False, ["r#1", "r#2"]), Presence("f2", False, ["r#1", "r#3"]),
               Presence("f3", False, ["r#1"]), Presence("s1", True, ["r#1", "r#3", "r#3"]),
               Presence("s2", True, ["r#4"])]
    votes = {v.id: v for v in presence_votes(records, min_failures=2)}
    assert isinstance(votes["r#1"], DownvoteOp) and votes["r#1"].amount == 2  # 3 failures - 1 success
    assert "r#2" not in votes  # a single failure is not "repeatedly"
    assert "r#3" not in votes  # one failure, one success (duplicates in one rollout count once)
    assert isinstance(votes["r#4"], UpvoteOp) and votes["r#4"].amount == 1


def test_pruning_to_capacity_removes_lowest_utility_first():
    memory = pool_memory(utilities=(2, -1, 0, 0, 3))
    ops = prune_ops(memory, capacity=3)
    # lowest utility first: #2 (-1); then the utility-0 rules by support, then older id: #3 before #4
    assert [op.id for op in ops] == ["game.act#2", "game.act#3"] and all(isinstance(o, DeleteOp) for o in ops)
    assert [op.id for op in prune_ops(memory, capacity=10, min_utility=-1)] == ["game.act#2"]
    assert prune_ops(memory, capacity=10) == []


def test_adds_to_a_full_pool_are_kept_and_the_pool_pruned_back_to_capacity():
    memory = pool_memory(utilities=(1, 0, -2, 2))
    ops = [AddOp(route=R, text="Take the key before you open a locked door.", kind="rule"),
           AddOp(route=R, text="Look at the recipe before you pick up food.", kind="rule")]
    new, report, prune = apply_pool_update(memory, ops, bounds=PolicyBounds(max_entries_per_route=4),
                                           capacity=4, provenance=prov())
    ids = sorted(e.id for e in new.active_entries(R))
    assert len(report.applied) == 2 and len(ids) == 4
    # removed: #3 (utility -2) then #2 (utility 0, older than the two new rules with utility 0)
    assert [a.entry_id for a in prune.applied] == ["game.act#3", "game.act#2"]
    assert ids == ["game.act#1", "game.act#4", "game.act#5", "game.act#6"]


def test_reference_store_keeps_newest_per_family_and_respects_iterations(tmp_path):
    store = ReferenceStore(tmp_path / "refs.json", max_per_family=2)
    store.add("twx/cooking", {"task_id": "a", "query": "q", "lines": []}, 1)
    store.add("twx/cooking", {"task_id": "b", "query": "q", "lines": []}, 2)
    store.add("twx/cooking", {"task_id": "c", "query": "q", "lines": []}, 3)
    store.add("hotpotqa", {"task_id": "x", "query": "q", "lines": []}, 1)
    store.save()
    again = ReferenceStore(tmp_path / "refs.json", max_per_family=2)
    assert [r["task_id"] for r in again.before("twx/cooking", 3)] == ["b"]
    assert [r["task_id"] for r in again.before("twx/cooking", 9)] == ["b", "c"]
    assert again.before("other", 9) == []


def test_routes_named_loosely_by_an_lm_are_matched():
    routes = ["hotpot.hop1_query", "hotpot.hop2_query", "hotpot.answer"]
    assert match_route("hotpot.answer", routes, None) == "hotpot.answer"
    assert match_route("Answer", routes, None) == "hotpot.answer"
    assert match_route("query", routes, "hotpot.answer") == "hotpot.answer"  # ambiguous -> default
    assert match_route(None, routes, "x") == "x" and match_route("nothing", routes, None) is None


def test_placeholders_copied_from_the_prompt_are_not_rules():
    assert is_placeholder("<rule>") and is_placeholder(' "<new rule>" ') and is_placeholder("...")
    assert is_placeholder(None) and not is_placeholder("Open <the> door first.")
    ops, dropped = to_policy_ops([ReflectorOp(op="ADD", text="<a very long placeholder>"),
                                  ReflectorOp(op="EDIT", id="game.act#1", text="<new rule>")],
                                 RulePool(pool_memory()), routes=[R], trace_ids=[], default_route=R)
    assert ops == [] and len(dropped) == 2


def test_reflection_schema_offers_only_the_program_routes():
    from nlgrad.methods.rule_pool import reflection_schema

    schema = reflection_schema(("hotpot.hop1_query", "hotpot.answer"))
    route_spec = schema.model_json_schema()["$defs"]["ReflectorOpOnRoutes"]["properties"]["route"]
    assert route_spec["enum"] == ["hotpot.hop1_query", "hotpot.answer"]  # no null: the grammar must pick a route
    assert "route" in schema.model_json_schema()["$defs"]["ReflectorOpOnRoutes"]["required"]
    reply = schema.model_validate({"ops": [{"op": "add", "route": " answer ", "text": "Quote the span."},
                                           {"op": "UPVOTE", "id": "hotpot.answer#1"}]})
    assert reply.ops[0].route == "hotpot.answer" and reply.ops[1].id == "hotpot.answer#1"
    assert isinstance(reply, Reflection)
    with pytest.raises(ValidationError, match="route"):
        schema.model_validate({"ops": [{"op": "ADD", "route": "retrieve", "text": "x"}]})
    with pytest.raises(ValidationError, match="route"):
        schema.model_validate({"ops": [{"op": "ADD", "text": "An ADD must say which step it is for."}]})
    assert reflection_schema(()) is Reflection
