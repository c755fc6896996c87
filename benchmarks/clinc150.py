"""CLINC150 (CC BY 3.0): 150 intents in 10 domains, plus out-of-scope queries (label ``oos``).

Data: ``shared/data/clinc150/{train,dev,test}.jsonl`` (15100 / 3100 / 3700 rows, each with a ``domain``) and
``domains.json`` (the 10 domains and their 15 intents each); see that folder's SOURCE.md. Found via ``data_dir=``,
``$NLGRAD_CLINC150_DIR``, then ``../shared/data/clinc150``.

Metric: overall accuracy is the score (an out-of-scope query is right when the reply is ``oos``); tags add
``missed_oos`` (an out-of-scope query given an intent) and ``false_oos`` (an in-scope query called out of scope);
:meth:`summary_metrics` reports in-scope accuracy and out-of-scope recall beside it. The two-step program
``intent_route`` uses the dataset's own domains as groups (:attr:`label_groups`), plus ``oos`` as a group
of its own.
"""

from __future__ import annotations

from pathlib import Path

from nlgrad.benchmarks.intent_common import IntentBenchmark, read_json

OOS = "oos"


class Clinc150Benchmark(IntentBenchmark):
    id = "clinc150"
    folder = "clinc150"
    env_var = "NLGRAD_CLINC150_DIR"
    label_file = "domains.json"
    oos_label = OOS

    def read_labels(self, path: Path) -> list[str]:
        return [label for labels in self._domains(path).values() for label in labels]

    def _domains(self, path: Path) -> dict[str, list[str]]:
        domains = read_json(path)
        if not isinstance(domains, dict) or not all(isinstance(v, list) for v in domains.values()):
            raise ValueError("domains.json must map each domain to a list of its intents")
        return {str(k): [str(x) for x in v] for k, v in domains.items()}

    @property
    def label_groups(self) -> dict[str, list[str]]:
        return {**self._domains(self.root() / self.label_file), OOS: [OOS]}
