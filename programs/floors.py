"""Floors for static benchmarks (no LM): echo the task's main text, answer the majority train label, or the label of
the most similar train message (BM25), what a user would try first on a routing task."""

from __future__ import annotations

from collections import Counter
from typing import Any

from nlgrad.runtime.context import RunContext
from nlgrad.runtime.protocols import Task
from nlgrad.text import BM25Index

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


class NearestLabelFloor:
    """Outputs the gold label of the train task whose main text is most similar to the task's (BM25 over the train
    split; no LM). Ties and a query with no word in common: the majority train label."""

    name = "nearest_label_floor"
    routes: list[str] = []

    def __init__(self, benchmark=None):
        if benchmark is None:
            raise ValueError("nearest_label_floor needs the benchmark to index its train split")
        train = benchmark.tasks("train")
        self.labels = [gold_label(t.gold) for t in train]
        self.index = BM25Index([_main_text(t) for t in train])
        self.majority = MajorityLabelFloor(benchmark).label

    def run(self, task: Task, ctx: RunContext) -> Any:  # noqa: ARG002
        hits = self.index.search(_main_text(task), 1)
        return self.labels[hits[0][0]] if hits and hits[0][1] > 0 else self.majority


def _main_text(task: Task) -> str:
    return next((task.inputs[k] for k in (*TEXT_KEYS, "message") if isinstance(task.inputs.get(k), str)), "")
