"""The backward pass: feedback flows from the outcome back through the trace graph to every module call.

Nodes are visited in reverse topological order. A module node gets feedback from the critic conditioned on what it
saw, what it produced, and the feedback already given to its successors, so an upstream module learns what its
output caused downstream. Tool and environment nodes pass their successors' feedback upstream unchanged.

A route that runs many times in one trace (an episode loop) is not given feedback at every step: the critic first
*localizes* the few steps that decided the outcome, only those get feedback, and the others pass it through. Blame
is thereby concentrated on the steps that mattered instead of being spread evenly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

from nlgrad.credit.critic import Critic
from nlgrad.credit.schemas import Diagnosis
from nlgrad.runtime.trace import Trace
from nlgrad.text import clip


@dataclass
class NodeFeedbackRecord:
    trace_id: str
    node_id: str
    route: str
    feedback: str
    suggestion: str
    blame: float
    success: bool
    score: float
    source: str  # "critic" (per-node call) or "localized" (chosen step of a loop)
    step: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class BackwardPass:
    def __init__(self, critic: Critic, *, loop_threshold: int = 4, max_localized_steps: int = 3,
                 carry_chars: int = 500):
        self.critic = critic
        self.loop_threshold = loop_threshold
        self.max_localized_steps = max_localized_steps
        self.carry_chars = carry_chars

    def _carry(self, texts: list[str]) -> str:
        return clip(" | ".join(dict.fromkeys(t for t in texts if t)), self.carry_chars)

    def run(self, trace: Trace, *, score: float, success: bool, feedback: str,
            diagnosis: Diagnosis | None = None) -> list[NodeFeedbackRecord]:
        outcome = "success" if success else "failure"
        diag_text = ""
        if diagnosis is not None:
            diag_text = diagnosis.what_went_wrong if not success else (diagnosis.what_worked or "")
        counts = Counter(n["route"] for n in trace.module_calls())
        looped = {route for route, count in counts.items() if count > self.loop_threshold}

        localized: dict[str, tuple[int, str, str]] = {}
        for route in sorted(looped):
            reply, lines = self.critic.localize(trace, route, outcome=outcome, score=score,
                                                feedback=f"{feedback} {diag_text}".strip(),
                                                max_steps=self.max_localized_steps)
            by_step = {line["step"]: line["node"] for line in lines}
            for item in (reply.steps if reply else [])[: self.max_localized_steps]:
                if item.step in by_step:  # ignore steps the critic invented
                    localized[by_step[item.step]] = (item.step, item.feedback, item.suggestion)

        records: list[NodeFeedbackRecord] = []
        given: dict[str, str] = {}
        for node_id in trace.reverse_topological():
            node = trace.node(node_id)
            downstream = [given[c] for c in trace.children(node_id) if given.get(c)]
            if node["kind"] == "output":
                given[node_id] = clip(f"final outcome: {outcome} (score {score:.2f}). {feedback}", self.carry_chars)
                continue
            if node["kind"] != "module":
                given[node_id] = self._carry(downstream)
                continue
            route = node["route"]
            if route in looped:
                if node_id in localized:
                    step, text, suggestion = localized[node_id]
                    records.append(NodeFeedbackRecord(trace.task_id, node_id, route, text, suggestion, 1.0,
                                                      success, score, "localized", step))
                    given[node_id] = self._carry([f"step {step} of {route}: {text}", *downstream])
                else:
                    given[node_id] = self._carry(downstream)
                continue
            reply = self.critic.node_feedback(trace, node_id, outcome=outcome, score=score, diagnosis=diag_text,
                                              downstream=downstream)
            if reply is None:
                given[node_id] = self._carry(downstream)
                continue
            records.append(NodeFeedbackRecord(trace.task_id, node_id, route, reply.feedback, reply.suggestion,
                                              reply.blame, success, score, "critic", node.get("step")))
            given[node_id] = self._carry([f"{route} was told: {reply.feedback}", *downstream])
        return records
