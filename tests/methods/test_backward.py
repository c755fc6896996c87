"""Backward pass: reverse topological order, conditioning on successors' feedback, localized blame in loops."""

import json

import litellm
import pytest

from nlgrad.credit import BackwardPass, Critic
from nlgrad.runtime.trace import Trace


def hand_built_trace() -> Trace:
    """input -> hop1 -> retrieve(tool) -> hop2 -> answer -> output, plus hop1 -> answer (skip edge)."""
    t = Trace(task_id="q1")
    inp = t.add_node("input", "task", inputs={"question": "Q"})
    msgs = lambda s: [{"role": "user", "content": s}]  # noqa: E731
    h1 = t.add_node("module", "qa.hop1", parents=[inp], messages=msgs("find Q"), output="query one")
    r = t.add_node("tool", "retrieve", parents=[h1], result=["p1"])
    h2 = t.add_node("module", "qa.hop2", parents=[r], messages=msgs("refine with p1"), output="query two")
    a = t.add_node("module", "qa.answer", parents=[h2, h1], messages=msgs("answer from p2"), output="wrong")
    t.add_node("output", "task.output", parents=[a])
    return t


@pytest.fixture
def critic_log(monkeypatch):
    real, log = litellm.completion, []

    def fake(*args, **kwargs):
        user = kwargs["messages"][-1]["content"]
        route = user.split("This step (route ")[1].split(")")[0]
        log.append((route, user))
        kwargs["mock_response"] = json.dumps({"feedback": f"FB-{route}", "suggestion": f"fix {route}",
                                              "blame": 0.7})
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", fake)
    return log


def test_reverse_order_and_conditioning(make_lm, critic_log):
    records = BackwardPass(Critic(make_lm())).run(hand_built_trace(), score=0.0, success=False,
                                                   feedback="gold was X")
    assert [route for route, _ in critic_log] == ["qa.answer", "qa.hop2", "qa.hop1"]
    prompts = dict(critic_log)
    assert "gold was X" in prompts["qa.answer"]  # the outcome reaches the last module
    assert "qa.answer was told: FB-qa.answer" in prompts["qa.hop2"]  # through the tool node
    assert "qa.hop2 was told: FB-qa.hop2" in prompts["qa.hop1"]  # and further up
    assert "qa.answer was told" in prompts["qa.hop1"]  # the skip edge carries answer's feedback too
    assert [(r.route, r.feedback, r.source) for r in records] == [
        ("qa.answer", "FB-qa.answer", "critic"), ("qa.hop2", "FB-qa.hop2", "critic"),
        ("qa.hop1", "FB-qa.hop1", "critic")]


def episode_trace(steps=8) -> Trace:
    t = Trace(task_id="ep")
    prev = t.add_node("env", "env.reset", observation="start", step=0)
    for i in range(steps):
        m = t.add_node("module", "game.act", parents=[prev], messages=[{"role": "user", "content": f"s{i}"}],
                       output=str(i), parsed={"action": f"act {i}"}, step=i)
        prev = t.add_node("env", "env.step", parents=[m], action=f"act {i}", observation=f"obs {i}", step=i + 1)
    t.add_node("output", "task.output", parents=[prev])
    return t


def test_loop_blame_is_localized_to_chosen_steps(make_lm, monkeypatch):
    real, log = litellm.completion, []

    def fake(*args, **kwargs):
        log.append(kwargs["messages"][-1]["content"])
        kwargs["mock_response"] = json.dumps({"steps": [
            {"step": 3, "feedback": "looped", "suggestion": "try a new exit"},
            {"step": 99, "feedback": "invented step"}]})
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", fake)
    trace = episode_trace(8)
    records = BackwardPass(Critic(make_lm()), loop_threshold=4).run(trace, score=0.0, success=False,
                                                                      feedback="ran out of steps")
    assert len(log) == 1 and "act 2 => obs 2" in log[0]  # one localization call, not one per step
    assert [(r.step, r.feedback, r.source) for r in records] == [(3, "looped", "localized")]
    assert records[0].node_id == trace.module_calls("game.act")[2]["id"]


def test_unparsable_critic_reply_is_skipped_not_fatal(make_lm, script):
    script(["no json", "still no json"] * 3)
    critic = Critic(make_lm())
    records = BackwardPass(critic).run(hand_built_trace(), score=0.0, success=False, feedback="x")
    assert records == [] and len(critic.skipped) == 3
    assert all("Diagnosis" not in s["reason"] for s in critic.skipped)
