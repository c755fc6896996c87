"""The critic: diagnoses a trace against its outcome, and gives per-node / per-step feedback on request."""

from __future__ import annotations

import logging
from importlib.resources import files
from typing import Any, TypeVar

from pydantic import BaseModel

from nlgrad.credit.render import episode_lines, module_view
from nlgrad.credit.schemas import Diagnosis, LocalizedSteps, NodeFeedback
from nlgrad.errors import LMCallError, StructuredOutputError
from nlgrad.lm.client import LM
from nlgrad.runtime.module import Module
from nlgrad.runtime.trace import Trace

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)


def _template(name: str) -> Module:
    source = files("nlgrad.credit").joinpath(f"templates/{name}.j2").read_text(encoding="utf-8")
    return Module(route=f"critic.{name}", template=source, role="critic", template_name=f"{name}.j2")


class Critic:
    """Wraps the ``critic`` role. Every reply is parsed into a pydantic model; failures are logged and skipped."""

    def __init__(self, lm: LM, *, role: str = "critic", max_tokens: int = 256):
        self.lm, self.role, self.max_tokens = lm, role, max_tokens
        self._diagnose = _template("diagnose")
        self._node = _template("node_feedback")
        self._localize = _template("localize")
        self.skipped: list[dict[str, str]] = []

    def _ask(self, module: Module, schema: type[T], what: str, **inputs: Any) -> T | None:
        messages = module.render("", inputs)
        try:
            return self.lm.structured(self.role, messages, schema, max_tokens=self.max_tokens)
        except (StructuredOutputError, LMCallError) as exc:
            log.warning("critic skipped %s: %s", what, exc)
            self.skipped.append({"what": what, "reason": str(exc)[:500]})
            return None

    def diagnose(self, trace: Trace, score: float, success: bool, feedback: str) -> Diagnosis | None:
        calls = [module_view(n, prompt_chars=350, output_chars=160) for n in trace.module_calls()]
        if len(calls) > 8:  # long episodes: first and last calls only; steps are localized separately
            calls = calls[:3] + calls[-5:]
        return self._ask(self._diagnose, Diagnosis, f"diagnosis of {trace.task_id}",
                         outcome="success" if success else "failure", score=f"{score:.2f}",
                         feedback=feedback[:700], calls=calls, routes=trace.routes())

    def node_feedback(self, trace: Trace, node_id: str, *, outcome: str, score: float, diagnosis: str,
                      downstream: list[str]) -> NodeFeedback | None:
        view = module_view(trace.node(node_id))
        return self._ask(self._node, NodeFeedback, f"feedback for {trace.task_id}:{node_id}", node=view,
                         outcome=outcome, score=f"{score:.2f}", diagnosis=diagnosis[:500],
                         downstream=[d[:400] for d in downstream[:4]])

    def localize(self, trace: Trace, route: str, *, outcome: str, score: float, feedback: str,
                 max_steps: int = 3) -> tuple[LocalizedSteps | None, list[dict[str, Any]]]:
        lines = episode_lines(trace, route)
        reply = self._ask(self._localize, LocalizedSteps, f"step localization of {trace.task_id}:{route}",
                          outcome=outcome, score=f"{score:.2f}", feedback=feedback[:600], route=route, lines=lines,
                          max_steps=max_steps)
        return reply, lines
