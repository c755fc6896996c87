"""Banking77 (CC BY 4.0): route a bank customer's message to one of 77 fine-grained intents.

Data: ``shared/data/banking77/{train,dev,test}.jsonl`` (8003 / 2000 / 2310 rows) and ``labels.json``; see that
folder's SOURCE.md. Found via ``data_dir=``, ``$NLGRAD_BANKING77_DIR``, then ``../shared/data/banking77``. Metric and
tags: :mod:`nlgrad.benchmarks.intent_common`.

The dataset has no grouping of its labels; the two-step program ``intent_route`` defines its own
(:mod:`nlgrad.programs.intent_groups`).
"""

from __future__ import annotations

from pathlib import Path

from nlgrad.benchmarks.intent_common import IntentBenchmark, read_json


class Banking77Benchmark(IntentBenchmark):
    id = "banking77"
    folder = "banking77"
    env_var = "NLGRAD_BANKING77_DIR"
    label_file = "labels.json"

    def read_labels(self, path: Path) -> list[str]:
        labels = read_json(path)
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise ValueError("labels.json must be a JSON list of label strings")
        return labels
