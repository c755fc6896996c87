"""The fake LM world shared by tests/methods, tests/compare and tests/reliability (importable as ``fake_lm``).

A toy static benchmark whose success depends on policy text: gold is the input in upper case, and the fake agent
only shouts (upper-cases) when its system prompt says UPPERCASE. The fake critic and optimizer answer NLPG's prompts
so that the learned lesson is the UPPERCASE rule. :func:`install_fake_lm` serves a reply function through litellm's
own ``mock_response``; the reliability suite serves the same replies over HTTP.

``tests/`` is on ``sys.path`` in a pytest session (``tests/conftest.py`` is a rootdir-less conftest); subprocesses
and other entry points that import this module put it there themselves. The module has a name no conftest shares.
"""

from __future__ import annotations

import json
from typing import Callable

from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import MetricResult, Task

TEMPLATE = ("{% block system %}Repeat the text.{% if policy %}\nLessons:\n{{ policy }}{% endif %}{% endblock %}"
            "{% block user %}{{ text }}{% endblock %}")
UPPER_RULE = "Always write the repeated text in UPPERCASE letters."
SPLIT_OFFSET = {"train": 0, "dev": 100, "test": 200}


def correction(text: str, support: int) -> dict:
    """One proposed correction in the optimizer's reply shape, with ``support`` pieces of evidence."""
    return {"text": text, "when": "", "evidence": list(range(1, support + 1))}


# ---------------------------------------------------------------------------------------------- toy benchmark
class UpperCaseBenchmark:
    """Gold is the input in upper case; the fake agent only shouts when its policy says UPPERCASE.

    Tasks ``<prefix>/<split>/<i>`` have the text "word number <k>" (``k`` = the split's offset + ``i``); subclasses
    set the ids, the number of tasks per split (``size``) and may override :meth:`task`.
    """

    id, kind, default_program = "shout", "static", "shout"
    prefix = "shout"
    size = 12
    expected = "expected"  # the start of the failure feedback

    def tasks(self, split, n=None):
        offset = SPLIT_OFFSET[split]
        return [self.task(split, i, offset + i) for i in range(self.size if n is None else n)]

    def task(self, split: str, i: int, k: int) -> Task:
        return Task(id=f"{self.prefix}/{split}/{i}", split=split, inputs={"text": f"word number {k}"},
                    gold=f"WORD NUMBER {k}")

    def metric(self, task, output, episode=None):
        ok = output == task.gold
        return MetricResult(score=float(ok), success=ok,
                            feedback="correct" if ok else f"{self.expected} {task.gold!r}, got {output!r}")


class EchoProgram:
    """One module on one route (``routes[0]``): renders ``template`` with the task's text and returns the reply."""

    name = "shout"
    routes = ["shout.say"]
    template = TEMPLATE

    def __init__(self, benchmark=None):
        self.say = Module(self.routes[0], self.template)

    def run(self, task, ctx):
        return ctx.call(self.say, text=task.inputs["text"]).value


class ShoutBenchmark(UpperCaseBenchmark):
    def __init__(self, human_policy=None):
        if human_policy is not None:
            self.human_policy = human_policy


class ShoutProgram(EchoProgram):
    pass


# ---------------------------------------------------------------------------------------------- fake replies
def agent_reply(system: str, user: str) -> str:
    """The fake agent: repeats the user text, in upper case when its system prompt says UPPERCASE."""
    if "UPPERCASE" in system:
        return user.upper()
    return user


def critic_reply(user: str, route: str, corrections: list[dict]) -> str | None:
    """NLPG's critic and optimizer prompts (blaming ``route``, proposing ``corrections``); None for other prompts."""
    if "what_went_wrong" in user:
        return json.dumps({"what_went_wrong": "the answer was not in upper case", "what_worked": "",
                           "root_cause_route": route})
    if '"blame"' in user:
        return json.dumps({"feedback": "the output kept lower-case letters",
                           "suggestion": "When repeating text, write it in UPPERCASE", "blame": 0.9})
    if '"corrections"' in user:
        return json.dumps({"corrections": corrections})
    return None


def nlpg_reply(messages: list[dict], route: str, corrections: list[dict]) -> str:
    """Deterministic replies for the agent, critic and optimizer prompts of NLPG on the toy benchmark."""
    system, user = messages[0]["content"], messages[-1]["content"]
    reply = critic_reply(user, route, corrections)
    return agent_reply(system, user) if reply is None else reply


# ---------------------------------------------------------------------------------------------- installing
def install_fake_lm(monkeypatch, reply: Callable[[list[dict]], str]) -> list[list[dict]]:
    """Make every litellm.completion call answer ``reply(messages)`` (through ``mock_response``) for the test;
    returns the list that records each call's messages."""
    import litellm

    real, calls = litellm.completion, []

    def fake(*args, **kwargs):
        calls.append(kwargs["messages"])
        kwargs["mock_response"] = reply(kwargs["messages"])
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", fake)
    return calls


def serve_toy(monkeypatch, benchmark, program: Callable[[], object], modules=()) -> None:
    """Make nlgrad.optimize (and ``modules``) load ``benchmark`` for every benchmark id and ``program()`` for every
    program name."""
    import nlgrad.optimize as optimize

    for module in (optimize, *modules):
        monkeypatch.setattr(module, "load_benchmark", lambda bid, **kw: benchmark)
        monkeypatch.setattr(module, "load_program", lambda name, benchmark=None, **kw: program())
