"""IAPO's support / failed-use counts and TAPO's next observation, read from a hand-built trace's data edges."""

from nlgrad.runtime.trace import Trace
from nlgrad.trainer.trace_uses import call_uses, consumers


def build_trace():
    tr = Trace(task_id="t")
    root = tr.add_node("input", "task")
    reset = tr.add_node("env", "env.reset", parents=[root], observation="hall", valid_actions=[])
    act = tr.add_node("module", "twx.act", parents=[reset])
    confirm = tr.add_node("module", "twx.confirm", parents=[act])
    step1 = tr.add_node("env", "env.step", parents=[confirm], observation="kitchen", reward=0.0)  # moved: support
    act2 = tr.add_node("module", "twx.act", parents=[step1])
    step2 = tr.add_node("env", "env.step", parents=[act2], observation="nothing happens", reward=0.0)  # no change
    query = tr.add_node("module", "qa.query", parents=[root])
    tool_ok = tr.add_node("tool", "retrieve", parents=[query], result=[{"title": "A", "text": "a"}])
    query2 = tr.add_node("module", "qa.query", parents=[root])
    tool_bad = tr.add_node("tool", "retrieve", parents=[query2], error="Timeout: x")
    tool_empty = tr.add_node("tool", "retrieve", parents=[query2], result=[])
    tr.add_edge(act2, tool_ok, kind="control")  # not a data edge: not a use
    states = ["s:hall", "s:kitchen", "s:kitchen"]
    return tr, states, dict(act=act, confirm=confirm, act2=act2, query=query, query2=query2, step1=step1,
                            step2=step2, tool_ok=tool_ok, tool_bad=tool_bad, tool_empty=tool_empty)


def test_consumers_follow_data_edges_through_module_calls():
    tr, _, ids = build_trace()
    assert consumers(tr, ids["act"]) == [ids["step1"]]  # through the confirm call
    assert consumers(tr, ids["act2"]) == [ids["step2"]]  # the control edge to a tool is ignored
    assert consumers(tr, ids["query2"]) == [ids["tool_bad"], ids["tool_empty"]]


def test_supported_and_failed_uses_and_next_observation():
    tr, states, ids = build_trace()
    uses = call_uses(tr, states)
    assert (uses[ids["act"]].supported, uses[ids["act"]].failed) == (1, 0)
    assert uses[ids["act"]].next_observation == "kitchen"
    assert (uses[ids["confirm"]].supported, uses[ids["confirm"]].failed) == (1, 0)
    # the second step left the state unchanged with reward 0: a failed use
    assert (uses[ids["act2"]].supported, uses[ids["act2"]].failed) == (0, 1)
    assert uses[ids["act2"]].next_observation == "nothing happens"
    assert (uses[ids["query"]].supported, uses[ids["query"]].failed, uses[ids["query"]].next_observation) == \
        (1, 0, None)
    assert (uses[ids["query2"]].supported, uses[ids["query2"]].failed) == (0, 2)  # an error and an empty result
    # a positive reward counts as support even without a state change
    tr.update_node(ids["step2"], reward=1.0)
    assert call_uses(tr, states)[ids["act2"]].supported == 1
