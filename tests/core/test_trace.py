"""Trace graph shape for a branching program, and lossless JSON round-trip."""

import json

import pytest

from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.trace import Trace, TraceFormatError

TEMPLATE = "{% block system %}You answer.{{ policy }}{% endblock %}{% block user %}{{ q }}{% endblock %}"


def branching_program(ctx: RunContext):
    """plan -> (search_a, search_b in parallel) -> tool merge -> answer."""
    plan = ctx.call(Module("demo.plan", TEMPLATE), q=ctx.task.inputs["question"])
    a = ctx.call(Module("demo.search", TEMPLATE), q=plan, sample_index=0)
    b = ctx.call(Module("demo.search", TEMPLATE), q=plan, sample_index=1)
    merged = ctx.tool("merge", lambda items: " | ".join(items), items=[a, b])
    return ctx.call(Module("demo.answer", TEMPLATE), q=merged)


@pytest.fixture
def trace(make_lm, script):
    script(["plan", "found A", "found B", "final"])
    trace = Trace(task_id="t1", program="demo")
    ctx = RunContext(task=Task(id="t1", split="dev", inputs={"question": "Q?"}), lm=make_lm(), trace=trace)
    out = branching_program(ctx)
    assert out.value == "final"
    return trace


def test_branching_graph_shape(trace):
    g = trace.graph
    calls = {n["id"]: n for n in trace.nodes()}
    by_route = {}
    for node in calls.values():
        by_route.setdefault(node["route"], []).append(node["id"])
    (plan,), searches, (merge,), (answer,) = (by_route["demo.plan"], by_route["demo.search"], by_route["merge"],
                                               by_route["demo.answer"])
    assert len(searches) == 2
    assert set(g.successors(plan)) == set(searches)  # a real branch, not a list
    assert set(g.predecessors(merge)) == set(searches)
    assert list(g.predecessors(answer)) == [merge]
    assert calls[merge]["result"] == "found A | found B"
    assert calls[searches[1]]["sample_index"] == 1
    order = trace.reverse_topological()
    assert order.index(answer) < order.index(merge) < min(order.index(s) for s in searches) < order.index(plan)


def test_module_node_records_prompt_output_tokens(trace):
    node = trace.module_calls("demo.answer")[0]
    assert node["messages"][-1] == {"role": "user", "content": "found A | found B"}
    assert node["output"] == "final" and node["prompt_tokens"] > 0 and "latency_s" in node
    assert node["model"] == "openai/test-model" and node["role"] == "agent"


def test_json_round_trip_is_lossless(trace, tmp_path):
    path = tmp_path / "t.json"
    trace.save(path)
    loaded = Trace.load(path)
    assert loaded.to_dict() == trace.to_dict()
    assert sorted(loaded.graph.edges) == sorted(trace.graph.edges)
    assert loaded.reverse_topological() == trace.reverse_topological()


def test_corrupt_trace_gives_clear_error(tmp_path, trace):
    path = tmp_path / "bad.json"
    path.write_text(trace.to_json()[:50])
    with pytest.raises(TraceFormatError, match="bad.json"):
        Trace.load(path)
    data = json.loads(trace.to_json())
    data["nodes"][0]["kind"] = "banana"
    path.write_text(json.dumps(data))
    with pytest.raises(TraceFormatError, match="kind"):
        Trace.load(path)
