"""NLPG step 4b (optional): abstract specific corrections across tasks before their support is counted.

A small optimizer tends to write one correction per failed task that names that task's objects ("When you take the
toaster, put it in the kitchen cupboard"), so each has support 1 and aggregation drops them all, although the failures
recur. Here the optimizer LM reads a route's candidates together and proposes general lessons, each naming the
candidates it covers (ExpeL-style insight extraction). Deterministic code then builds each new candidate: its traces
are the union of the covered candidates' traces, so a generalization only gains support from distinct failed traces
(two candidates from one trace still make support 1), and a lesson that covers fewer than two candidates, contains
one of them verbatim (a restatement or a concatenation), copies instance details or copies the prompt's worked
example is dropped here with the reason recorded. The originals stay in the pool; aggregation then merges, checks and
counts them all, new and original alike.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel, Field

from nlgrad.errors import LMCallError, StructuredOutputError
from nlgrad.lm.client import LM
from nlgrad.methods.lesson_checks import copied_instance_details, copied_passage
from nlgrad.methods.nlpg.proposals import Candidate
from nlgrad.methods.prompts import method_module
from nlgrad.methods.reply_fields import IntList, OptionalText, Text

log = logging.getLogger(__name__)
# the worked example in abstract.j2 (another domain, so that copying it is easy to detect)
EXAMPLE_LESSON = "When a customer asks about an order, quote the order's number in the reply."


class GeneralLesson(BaseModel):
    text: Text = Field(min_length=8, max_length=400)
    when: OptionalText = None
    covers: IntList = Field(default_factory=list)


class GeneralLessonList(BaseModel):
    lessons: list[GeneralLesson] = Field(default_factory=list)


class CorrectionAbstractor:
    """Proposes general corrections that each cover >= 2 of a route's candidates; records what it dropped."""

    def __init__(self, lm: LM, *, role: str = "optimizer", max_items: int = 12, max_lessons: int = 3,
                 max_tokens: int = 384):
        self.lm, self.role = lm, role
        self.max_items, self.max_lessons, self.max_tokens = max_items, max_lessons, max_tokens
        self.module = method_module("abstract.j2", "optimizer.abstract")
        self.skipped: list[dict[str, str]] = []
        self.dropped: list[dict] = []

    def abstract(self, route: str, candidates: list[Candidate], *, instructions: str = "",
                 instance_specific: set[str] | None = None, sample_index: int = 0) -> list[Candidate]:
        items = [c for c in candidates if c.route == route][: self.max_items]
        if len({c.line for c in items}) < 2:
            return []
        messages = self.module.render("", {"route": route, "instructions": instructions[:600],
                                           "items": [c.line for c in items], "max_lessons": self.max_lessons,
                                           "example_lesson": EXAMPLE_LESSON})
        try:
            reply = self.lm.structured(self.role, messages, GeneralLessonList, max_tokens=self.max_tokens,
                                       sample_index=sample_index)
        except (StructuredOutputError, LMCallError) as exc:
            log.warning("abstraction for %s skipped: %s", route, exc)
            self.skipped.append({"route": route, "reason": str(exc)[:500]})
            return []
        out = []
        for lesson in reply.lessons[: self.max_lessons]:
            covered = sorted({i for i in lesson.covers if 1 <= i <= len(items)})
            record = {"route": route, "text": lesson.text, "when": lesson.when, "covers": covered}
            copied = copied_instance_details(f"{lesson.when or ''} {lesson.text}", instance_specific or set())
            if len(covered) < 2:
                self.dropped.append({**record, "reason": "covers fewer than two of the candidates"})
            elif restated := [i for i in covered if copied_passage(items[i - 1].text, lesson.text)]:
                self.dropped.append({**record, "reason": f"restates covered candidate(s) {restated} instead of "
                                                          "generalizing them"})
            elif copied_passage(lesson.text, EXAMPLE_LESSON):
                self.dropped.append({**record, "reason": "copies the prompt's worked example"})
            elif copied:
                self.dropped.append({**record, "reason": f"copies instance details: {', '.join(copied)}"})
            else:
                traces = sorted({t for i in covered for t in items[i - 1].trace_ids})
                notes = [f"generalizes: {items[i - 1].text}" for i in covered]
                out.append(Candidate(route=route, text=lesson.text, when=lesson.when, trace_ids=traces, notes=notes))
        return out
