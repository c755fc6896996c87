"""NLPG's lesson on how a route should use its worked examples, learned from a recurring trace pattern.

A call of a route with example entries is shown its nearest examples as prior turns. When a failed call was shown
an example whose reply was the right one and replied something else, the agent had the answer in front of it and did
not take it: an *ignored example*. Such failures are found in the batch's traces (the entries each call was shown
are recorded in the trace, the right reply comes from the program's ``reference_outputs``) and counted per route;
when at least ``min_support`` distinct tasks show the pattern, the optimizer LM is shown a few of them (the input,
the example it was shown with its reply, the reply it gave) and writes one lesson for the route on how to use its
examples. Deterministic code attaches the tasks as the lesson's support; the aggregation's checks and the shared
gate decide whether it stays, like any other NLPG candidate. A route that already holds such a lesson gets none.

Measured on banking77 x 1.5B, each call shown its one nearest example (dev, 200 tasks): the agent replied that
example's label about half the time, and a human-written lesson to follow it moved the NLPG examples from level with
random ones to +0.045 over them; this learner is how NLPG finds such a lesson itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from nlgrad.errors import LMCallError, StructuredOutputError
from nlgrad.methods.conditions import call_input_text
from nlgrad.methods.nlpg.confusion_examples import first_wrong_calls, same
from nlgrad.methods.nlpg.proposals import Candidate
from nlgrad.methods.nlpg.tag_lessons import TagLesson, usable_condition
from nlgrad.methods.prompts import method_module
from nlgrad.policy import EntryKind, PolicyMemory
from nlgrad.policy.examples import split_example
from nlgrad.runtime.executor import RunResult
from nlgrad.runtime.protocols import Task
from nlgrad.text import clip

log = logging.getLogger(__name__)

REASON = "how to use the shown examples"  # the note that marks a route's example-use lesson
SAMPLES = 3  # lessons written per route, each from its own cases (ExampleUseLessonWriter.write_all)


@dataclass(frozen=True)
class IgnoredExample:
    """A failed call that was shown an example with the right reply: its input, that example and what it replied."""

    task_id: str
    route: str
    message: str
    example: str
    expected: str
    got: str


def ignored_examples(program, memory: PolicyMemory, rollouts: RunResult,
                     tasks: dict[str, Task]) -> list[IgnoredExample]:
    """One :class:`IgnoredExample` per failed rollout whose first wrong call was shown an example of the right reply
    (the nearest such example: the last shown)."""
    examples = {e.id: e.text for r in memory.routes() for e in memory.active_entries(r) if e.kind == EntryKind.example}
    found = []
    for task_id, call, expected, got in first_wrong_calls(program, rollouts, tasks):
        right = [examples[i] for i in call.get("policy_entries") or []
                 if i in examples and same((split_example(examples[i]) or ("", ""))[1], expected)]
        if right:
            found.append(IgnoredExample(task_id, call["route"], call_input_text(call), right[-1], expected, got))
    return found


def has_example_use_lesson(memory: PolicyMemory, route: str) -> bool:
    return any(e.kind != EntryKind.example and REASON in (e.provenance.reason or "")
               for e in memory.active_entries(route))


class ExampleUseLessonWriter:
    """Writes one lesson per route from its ignored examples (see the module docstring)."""

    def __init__(self, lm, *, role: str = "optimizer", max_cases: int = 4, samples: int = SAMPLES,
                 max_tokens: int = 160):
        self.lm, self.role, self.max_cases, self.max_tokens = lm, role, max_cases, max_tokens
        self.samples = samples
        self.module = method_module("example_use_lesson.j2", "optimizer.example_use_lesson")
        self.skipped: list[dict[str, str]] = []

    def write_all(self, route: str, cases: list[IgnoredExample], *, instructions: str) -> list[Candidate]:
        """Up to ``samples`` lessons for ``route``, each written from its own ``max_cases`` of ``cases`` (a small
        writer's lesson depends on the few cases it reads, and may copy one of them: the aggregation drops such
        lessons and merges paraphrases, so the samples vote). Each is supported by every task of ``cases``."""
        chunks = [cases[i:i + self.max_cases] for i in range(0, len(cases), self.max_cases)][: self.samples]
        written = [self.write(route, chunk, instructions=instructions, support=cases) for chunk in chunks]
        return [c for c in written if c is not None]

    def write(self, route: str, cases: list[IgnoredExample], *, instructions: str,
              support: list[IgnoredExample] | None = None) -> Candidate | None:
        """The lesson for ``route`` from ``cases``, supported by the tasks of ``support`` (default: ``cases``), or
        ``None`` (recorded in :attr:`skipped`) when the writer's reply is unusable."""
        support = support or cases
        shown = [{"input": clip(c.message, 400), "example": clip(c.example, 500), "got": clip(c.got, 120),
                  "expected": clip(c.expected, 120)} for c in cases[: self.max_cases]]
        messages = self.module.render("", {"route": route, "instructions": instructions[:600], "cases": shown})
        try:
            reply = self.lm.structured(self.role, messages, TagLesson, max_tokens=self.max_tokens)
        except (StructuredOutputError, LMCallError) as exc:
            log.warning("example-use lesson for %s skipped: %s", route, exc)
            self.skipped.append({"route": route, "reason": str(exc)[:500]})
            return None
        when, dropped = usable_condition(reply.when, route)
        note = (f"{REASON}: {len({c.task_id for c in support})} failed tasks were shown an example of the right "
                f"reply and replied otherwise; written from {', '.join(c.task_id for c in cases[: self.max_cases])}")
        return Candidate(route=route, text=reply.text, when=when, trace_ids=sorted({c.task_id for c in support}),
                         notes=[note, dropped] if dropped else [note], kind=REASON)

