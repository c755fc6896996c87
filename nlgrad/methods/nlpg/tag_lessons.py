"""One lesson per recurring kind of failure (a :class:`~nlgrad.methods.nlpg.failure_groups.FailureGroup`).

The optimizer LM is shown several failures of one kind at once (inputs, outputs and the check's words) and asked for
one lesson; deterministic code attaches the group's tasks as the lesson's support and the group's discriminative
input patterns as its condition (``match``), so the lesson is shown only to calls whose input looks like the
failures it came from. A weak optimizer that cannot generalize across traces by itself still gets the recurrence.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel, Field

from nlgrad.errors import LMCallError, StructuredOutputError
from nlgrad.methods.lesson_checks import meta_condition
from nlgrad.methods.nlpg.failure_groups import FailureGroup, discriminative_patterns
from nlgrad.methods.nlpg.proposals import Candidate
from nlgrad.methods.prompts import method_module
from nlgrad.methods.reply_fields import OptionalText, Text
from nlgrad.text import clip

log = logging.getLogger(__name__)

MAX_CONDITION_WORDS = 15  # a longer "when" from the writer is a second lesson or a paraphrase of the inputs


def usable_condition(when: str | None, route: str) -> tuple[str | None, str]:
    """The writer's ``when`` if it reads as a condition, else ``None`` and why. A tag lesson's reach is its
    ``match`` patterns either way; ``when`` only says in words where it applies, so a long or run-related one
    ("score == 0.00", "..., make sure to follow this lesson") is dropped rather than rendered."""
    if not when:
        return None, ""
    if len(when.split()) > MAX_CONDITION_WORDS:
        return None, f"condition text dropped (over {MAX_CONDITION_WORDS} words): {when}"
    if meta := meta_condition(when, [route]):
        return None, f"condition text dropped (about the run, not the input: {meta!r}): {when}"
    return when, ""


class TagLesson(BaseModel):
    text: Text = Field(min_length=8, max_length=400)
    when: OptionalText = None


def feedback_about(feedback: str, tag: str) -> str:
    """The lines of a task's feedback that concern ``tag`` (the tag less its kind prefix: ``missed:punctuation:no_comma``
    -> lines naming ``punctuation:no_comma``), so a lesson writer reads what went wrong of this kind, not every
    violation of the task; the whole feedback when no line names it."""
    key = tag.split(":", 1)[1] if ":" in tag else tag
    lines = [line for line in feedback.splitlines() if key and key in line]
    return "\n".join(lines) or feedback


class TagLessonWriter:
    def __init__(self, lm, *, role: str = "optimizer", max_examples: int = 4, max_tokens: int = 160):
        self.lm, self.role, self.max_examples, self.max_tokens = lm, role, max_examples, max_tokens
        self.module = method_module("tag_lesson.j2", "optimizer.tag_lesson")
        self.skipped: list[dict[str, str]] = []

    def write(self, group: FailureGroup, *, other_inputs: list[str], instructions: str,
              unconditional: bool = False) -> Candidate | None:
        """The group's lesson, or ``None`` (recorded in :attr:`skipped`) when the reply is unusable or, unless
        ``unconditional``, when no input pattern separates the group from ``other_inputs``: such a lesson would be
        shown to every input."""
        patterns = discriminative_patterns(group.inputs, other_inputs)
        if not patterns and not unconditional:
            self.skipped.append({"route": group.route, "tag": group.tag, "reason": (
                "no input pattern separates the group from the batch's other inputs, so its lesson would reach every "
                "input (method option unconditional_tag_lessons=true writes it anyway)")})
            return None
        examples = [{"input": clip(i, 500), "output": clip(o, 300), "feedback": clip(feedback_about(f, group.tag), 400)}
                    for i, o, f in list(zip(group.inputs, group.outputs, group.feedback))[: self.max_examples]]
        messages = self.module.render("", {"route": group.route, "instructions": instructions[:600], "tag": group.tag,
                                           "examples": examples})
        try:
            reply = self.lm.structured(self.role, messages, TagLesson, max_tokens=self.max_tokens)
        except (StructuredOutputError, LMCallError) as exc:
            log.warning("lesson for %s / %s skipped: %s", group.route, group.tag, exc)
            self.skipped.append({"route": group.route, "tag": group.tag, "reason": str(exc)[:500]})
            return None
        note = f"failure tag {group.tag}: {group.support} tasks; condition " + (
            " | ".join(patterns) if patterns else "none (no input pattern separates the group)")
        when, dropped = usable_condition(reply.when, group.route)
        return Candidate(route=group.route, text=reply.text, when=when, trace_ids=sorted(set(group.task_ids)),
                         notes=[note, dropped] if dropped else [note], match=patterns)
