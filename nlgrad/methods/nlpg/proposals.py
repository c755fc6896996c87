"""Step 4 of NLPG: turn per-route node feedback into candidate corrections (optimizer LM, structured reply)."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

from pydantic import BaseModel, Field, field_validator

from nlgrad.credit.backward import NodeFeedbackRecord
from nlgrad.errors import LMCallError, StructuredOutputError
from nlgrad.lm.client import LM
from nlgrad.methods.prompts import method_module
from nlgrad.methods.reply_fields import IntList, OptionalText, Text
from nlgrad.policy import PolicyMemory, render_line

log = logging.getLogger(__name__)
_SUGGESTED = "Suggested:"  # how propose.j2 labels the critic's suggestion in a feedback item


class ProposedCorrection(BaseModel):
    text: Text = Field(min_length=8, max_length=400)
    when: OptionalText = None
    evidence: IntList = Field(default_factory=list)
    replaces: OptionalText = None

    @field_validator("text", mode="after")
    @classmethod
    def _lesson_not_feedback(cls, value: str) -> str:
        """A small optimizer sometimes copies a whole feedback item ("<what happened>. Suggested: <fix>") as the
        lesson; the lesson is then the suggestion, without the account of what happened."""
        head, sep, tail = value.rpartition(_SUGGESTED)
        if sep and len(tail.strip()) >= 8:
            return tail.strip()
        return value


class CorrectionList(BaseModel):
    corrections: list[ProposedCorrection] = Field(default_factory=list)


@dataclass
class Candidate:
    """A proposed correction for a route with the distinct traces that support it."""

    route: str
    text: str
    when: str | None
    trace_ids: list[str]
    replaces: str | None = None
    notes: list[str] = field(default_factory=list)
    match: list[str] = field(default_factory=list)  # input patterns: a conditional lesson (empty: always shown)
    kind: str | None = None  # what made the candidate, when not the critic's corrections: kept in the entry's reason

    @property
    def support(self) -> int:
        return len(set(self.trace_ids))

    @property
    def line(self) -> str:
        """The correction as it reads in a prompt: its condition, then its text."""
        return f"{self.when or ''} {self.text}".strip()

    def to_dict(self) -> dict:
        return {**asdict(self), "support": self.support}


class CorrectionProposer:
    def __init__(self, lm: LM, *, role: str = "optimizer", max_items: int = 12, max_corrections: int = 4,
                 max_tokens: int = 384):
        self.lm, self.role = lm, role
        self.max_items, self.max_corrections, self.max_tokens = max_items, max_corrections, max_tokens
        self.module = method_module("propose.j2", "optimizer.propose")
        self.skipped: list[dict[str, str]] = []

    def select_items(self, records: list[NodeFeedbackRecord]) -> list[NodeFeedbackRecord]:
        """Failures first (highest blame first), then successes for contrast; deterministic order."""
        ranked = sorted(records, key=lambda r: (r.success, -r.blame, r.trace_id, r.node_id))
        return ranked[: self.max_items]

    def propose(self, route: str, records: list[NodeFeedbackRecord], memory: PolicyMemory, *,
                instructions: str, rejected: list[str], sample_index: int = 0) -> list[Candidate]:
        items = self.select_items(records)
        if not items:
            return []
        entries = [{"id": e.id, "line": render_line(e)} for e in memory.active_entries(route)]
        messages = self.module.render("", {
            "route": route, "instructions": instructions[:600], "entries": entries, "rejected": rejected[-6:],
            "items": [{"outcome": "failure" if not r.success else "success", "feedback": r.feedback,
                       "suggestion": r.suggestion} for r in items],
            "max_corrections": self.max_corrections,
        })
        try:
            reply = self.lm.structured(self.role, messages, CorrectionList, max_tokens=self.max_tokens,
                                       sample_index=sample_index)
        except (StructuredOutputError, LMCallError) as exc:
            log.warning("proposal for %s skipped: %s", route, exc)
            self.skipped.append({"route": route, "reason": str(exc)[:500]})
            return []
        known_ids = {e["id"] for e in entries}
        out = []
        for correction in reply.corrections[: self.max_corrections]:
            traces = [items[i - 1].trace_id for i in correction.evidence if 1 <= i <= len(items)]
            replaces = correction.replaces if correction.replaces in known_ids else None
            out.append(Candidate(route=route, text=correction.text, when=correction.when,
                                 trace_ids=sorted(set(traces)), replaces=replaces))
        return out
