"""Instruction following (IFBench, IFEval): one module, route ``if.respond``, answers the prompt in one LM call.

The system block holds a short base instruction and the policy slot; the user block is the prompt verbatim. The
reply is kept exactly as generated (strict-mode checkers see leading spaces, fences and all).

Limitation: ``max_tokens`` defaults to 256 to keep runs of the default local model short on a CPU. Instructions
that ask for long answers (e.g. "at least 300 words", "5 paragraphs") then often fail for length alone; the output
records ``hit_token_cap`` and the metric's feedback says so when it happens.
"""

from __future__ import annotations

from typing import Any

from nlgrad.programs import program_template
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Task

ROUTE = "if.respond"
DEFAULT_MAX_TOKENS = 256


def keep_reply(text: str, inputs: dict[str, Any]) -> str:  # noqa: ARG001 - parser signature
    """The reply as generated (strict scoring checks the raw response)."""
    return text if isinstance(text, str) else ""


class InstructionFollowProgram:
    name = "if_follow"

    def __init__(self, benchmark=None, *, max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float | None = None):
        self.benchmark = benchmark
        template = program_template("if_respond.j2")
        self.respond = Module(route=ROUTE, template=template, role="agent", parser=keep_reply,
                              max_tokens=max_tokens, temperature=temperature, template_name="if_respond.j2")

    @property
    def routes(self) -> list[str]:
        return [ROUTE]

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        reply = ctx.call(self.respond, prompt=task.inputs["prompt"])
        node = ctx.trace.node(reply.node)
        used = int(node.get("completion_tokens") or 0)
        cap = self.respond.max_tokens or ctx.lm.settings.role(self.respond.role).max_tokens
        return {"response": reply.value, "completion_tokens": used, "max_tokens": cap,
                "hit_token_cap": bool(used) and used >= cap}
