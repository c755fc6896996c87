"""Helpers for tests/compare: a toy benchmark whose success depends on policy text, and fake LM replies that also
answer the baselines' optimizer prompts (GEPA reflection, MIPROv2 proposals, TextGrad gradients and updates);
served through litellm's mock_response by the fixtures in conftest.py.

Extends the pattern of tests/methods/conftest.py: the fake agent shouts (upper-cases) only when its system prompt
says UPPERCASE; every optimizer, asked anything, suggests the UPPERCASE rule in the shape its prompt wants.
"""

from __future__ import annotations

import json
import re

from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import MetricResult, Task

TEMPLATE = ("{% block system %}Repeat the text.{% if policy %}\nLessons:\n{{ policy }}{% endif %}{% endblock %}"
            "{% block user %}{{ text }}{% endblock %}")
RULE = "Always write the repeated text in UPPERCASE letters."


class ShoutBenchmark:
    """Gold is the input in upper case; the fake agent only shouts when its policy says UPPERCASE."""

    id, kind, default_program = "shout", "static", "shout"

    def __init__(self, human_policy=None):
        if human_policy is not None:
            self.human_policy = human_policy

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
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    user = messages[-1]["content"]
    everything = "\n".join(str(m.get("content", "")) for m in messages)
    # --- nlgrad's own critic / optimizer (NLPG) -----------------------------------------------------------------
    if "what_went_wrong" in user:
        return json.dumps({"what_went_wrong": "the answer was not in upper case", "what_worked": "",
                           "root_cause_route": "shout.say"})
    if '"blame"' in user:
        return json.dumps({"feedback": "the output kept lower-case letters",
                           "suggestion": "When repeating text, write it in UPPERCASE", "blame": 0.9})
    if '"corrections"' in user:
        return json.dumps({"corrections": [{"text": RULE, "when": "", "evidence": [1, 2, 3]}]})
    # --- GEPA's reflective proposer: the new instruction inside ``` ---------------------------------------------
    if "I provided an assistant with the following instructions" in everything:
        return f"```\n{RULE}\n```"
    # --- TextGrad: gradients (feedback) and the optimizer step ---------------------------------------------------
    if "<IMPROVED_VARIABLE>" in everything:
        return f"<IMPROVED_VARIABLE>{RULE}</IMPROVED_VARIABLE>"
    if "You will give feedback to a variable" in everything:
        return "The output keeps lower-case letters; the lessons should require UPPERCASE output."
    # --- DSPy (MIPROv2's proposer modules use DSPy's chat adapter: answer every requested output field) ------------
    if "[[ ## completed ## ]]" in everything:
        fields = re.findall(r"\[\[ ## (\w+) ## \]\]", system)
        wanted = [f for f in dict.fromkeys(fields) if f != "completed" and f"[[ ## {f} ## ]]\n{{" in system]
        outputs = wanted or ["output"]
        return "\n\n".join(f"[[ ## {f} ## ]]\n{RULE}" for f in outputs) + "\n\n[[ ## completed ## ]]"
    # --- the agent ------------------------------------------------------------------------------------------------
    if "UPPERCASE" in system:
        return user.upper()
    return user
