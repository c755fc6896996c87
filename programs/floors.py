"""Trivial floors for static benchmarks (no LM): echo the task's main text, or answer the majority train label."""

from __future__ import annotations

from collections import Counter
from typing import Any

from nlgrad.runtime.context import RunContext
from nlgrad.runtime.protocols import Task

TEXT_KEYS = ("question", "prompt", "claim", "text")


class EchoFloor:
    """Outputs the task's question / prompt / claim unchanged."""

    name = "echo_floor"
    routes: list[str] = []

    def __init__(self, benchmark=None):
        self.benchmark = benchmark

    def run(self, task: Task, ctx: RunContext) -> Any:  # noqa: ARG002
        for key in TEXT_KEYS:
            if isinstance(task.inputs.get(key), str):
                return task.inputs[key]
        return next((v for v in task.inputs.values() if isinstance(v, str)), "")


def gold_label(gold: Any) -> str:
    """A task's gold label: the gold itself, or its ``label`` field where the gold is a record (HoVer keeps the
    supporting facts beside the label)."""
    return str(gold.get("label") if isinstance(gold, dict) else gold)


class MajorityLabelFloor:
    """Outputs the most common gold label of the benchmark's train split (ties: alphabetical)."""

    name = "majority_floor"
    routes: list[str] = []

    def __init__(self, benchmark=None):
        if benchmark is None:
            raise ValueError("majority_floor needs the benchmark to count train labels")
        labels = Counter(gold_label(t.gold) for t in benchmark.tasks("train"))
        self.label = sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]

    def run(self, task: Task, ctx: RunContext) -> Any:  # noqa: ARG002
        return self.label
