"""A toy static benchmark whose success depends on policy text, and a fake LM world served via mock_response."""

from __future__ import annotations

import json

import litellm
import pytest

from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import MetricResult, Task

TEMPLATE = ("{% block system %}Repeat the text.{% if policy %}\nLessons:\n{{ policy }}{% endif %}{% endblock %}"
            "{% block user %}{{ text }}{% endblock %}")


class ShoutBenchmark:
    """Gold is the input in upper case; the fake agent only shouts when its policy says UPPERCASE."""

    id, kind, default_program = "shout", "static", "shout"

    def tasks(self, split, n=None):
        offset = {"train": 0, "dev": 100, "test": 200}[split]
        count = 12 if n is None else n
        return [Task(id=f"shout/{split}/{i}", split=split, inputs={"text": f"word number {offset + i}"},
                     gold=f"WORD NUMBER {offset + i}") for i in range(count)]

    def metric(self, task, output, episode=None):
        ok = output == task.gold
        return MetricResult(score=float(ok), success=ok,
                            feedback="correct" if ok else f"expected {task.gold!r}, got {output!r}")


class ShoutProgram:
    name = "shout"
    routes = ["shout.say"]

    def __init__(self, benchmark=None):
        self.say = Module("shout.say", TEMPLATE)

    def run(self, task, ctx):
        return ctx.call(self.say, text=task.inputs["text"]).value


def fake_reply(messages) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if "what_went_wrong" in user:
        return json.dumps({"what_went_wrong": "the answer was not in upper case", "what_worked": "",
                           "root_cause_route": "shout.say"})
    if '"blame"' in user:
        return json.dumps({"feedback": "the output kept lower-case letters",
                           "suggestion": "When repeating text, write it in UPPERCASE", "blame": 0.9})
    if '"corrections"' in user:
        return json.dumps({"corrections": [
            {"text": "Always write the repeated text in UPPERCASE letters.", "when": "", "evidence": [1, 2, 3]},
            {"text": "Mention word number 7 first.", "when": "", "evidence": [1, 2]},  # copies instance details
            {"text": "Add a friendly greeting.", "when": "", "evidence": [1]},  # one-off: support 1
        ]})
    if "UPPERCASE" in system:
        return user.upper()
    return user


@pytest.fixture
def fake_world(monkeypatch):
    real = litellm.completion
    calls = []

    def fake(*args, **kwargs):
        calls.append(kwargs["messages"])
        kwargs["mock_response"] = fake_reply(kwargs["messages"])
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", fake)
    return calls


@pytest.fixture
def shout(monkeypatch):
    import nlgrad.optimize as optimize

    monkeypatch.setattr(optimize, "load_benchmark", lambda bid, **kw: ShoutBenchmark())
    monkeypatch.setattr(optimize, "load_program", lambda name, benchmark=None, **kw: ShoutProgram())
