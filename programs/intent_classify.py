"""Intent routing in one step: the label list in a fixed system prompt, the customer's message last.

One module, ``intent.classify``. The system prompt holds every label of the benchmark (and says which one means out
of scope, where there is one) and is the same for every message, so a local server reuses its prefix. The reply is
constrained to the label set where the model's server takes a decoding grammar (the embedded llama.cpp server);
elsewhere it is read by :func:`~nlgrad.programs.intent_labels.read_label`, mapped to the nearest label when it is
none, and marked ``exact: False``. Worked examples in the policy (``example`` entries) come as prior turns when the
policy's selection says so (:class:`nlgrad.policy.schema.Selection`), each call shown the few nearest its message.

Output: ``{"label", "exact", "reply"}``.
"""

from __future__ import annotations

from typing import Any

from nlgrad.programs import program_template
from nlgrad.programs.intent_labels import read_label
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.registry import load_benchmark

CLASSIFY = "intent.classify"


def benchmark_labels(benchmark) -> tuple[list[str], str | None]:
    """The benchmark's labels and its out-of-scope label (None where it has none); a clear error otherwise."""
    labels = getattr(benchmark, "labels", None)
    if not labels:
        raise ValueError(f"the intent programs need a benchmark with a `labels` list; "
                         f"{getattr(benchmark, 'id', benchmark)!r} has none")
    return list(labels), getattr(benchmark, "oos_label", None)


class IntentClassifyProgram:
    name = "intent_classify"

    def __init__(self, benchmark=None, *, max_tokens: int = 24):
        self.benchmark = benchmark if benchmark is not None else load_benchmark("banking77")
        labels, oos = benchmark_labels(self.benchmark)
        self.labels = labels
        self.classify = Module(route=CLASSIFY, template=program_template("intent_classify.j2"),
                               parser=lambda text, inputs: read_label(text, labels), max_tokens=max_tokens,
                               template_name="intent_classify.j2", constants={"labels": labels, "oos": oos},
                               choices=labels)

    @property
    def routes(self) -> list[str]:
        return [CLASSIFY]

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        return ctx.call(self.classify, message=task.inputs["message"]).value

    def reference_outputs(self, task: Task) -> dict[str, str]:
        """What each route should have replied for ``task`` (the gold label): the learner's worked examples."""
        return {CLASSIFY: str(task.gold)}
