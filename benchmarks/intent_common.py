"""What the intent-routing benchmarks share (Banking77, CLINC150): data files, label matching, the metric.

Data: ``{train,dev,test}.jsonl`` with one ``{"id", "text", "label"}`` object per line (CLINC150 adds ``domain``), and
a label file (see each folder's SOURCE.md under ``shared/data/``). ``tasks(split, n)`` returns the first ``n`` rows
in file order (the files are already shuffled), so splits are fixed and disjoint.

Metric: the predicted label compared case-insensitively with the gold label string (labels are kept exactly as the
dataset spells them: Banking77 has ``Refund_not_showing_up`` and ``reverted_card_payment?``). Score 1/0. Failure
tags: ``confused:<gold>-><predicted>`` and ``invalid_label`` (the program's reply was not a label and was mapped to
the nearest one, or no label could be read); a benchmark with an out-of-scope label adds ``missed_oos`` /
``false_oos``. A program's output is a label string, or a dict with ``label`` and ``exact`` (False: the reply was
mapped to the nearest label).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from nlgrad.benchmarks.qa_metrics import read_jsonl, resolve_data_dir
from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import SPLITS, Episode, MetricResult, Task

SPLIT_FILES = tuple(f"{s}.jsonl" for s in SPLITS)


def output_label(output: Any) -> tuple[str | None, bool]:
    """``(label, exact)`` of a program's output: a dict's ``label`` and ``exact`` (default True), or the text."""
    if isinstance(output, dict):
        label = output.get("label")
        return (str(label) if label else None), bool(output.get("exact", True))
    if isinstance(output, str) and output.strip():
        return output.strip(), True
    return None, False


class IntentBenchmark:
    """A static benchmark over ``{"id", "text", "label"}`` rows. Subclasses set ``id``, ``folder``, ``env_var``,
    ``label_file`` and :meth:`read_labels`; ``oos_label`` names an out-of-scope label where there is one."""

    kind = "static"
    default_program = "intent_classify"
    default_agent = "local/qwen2.5-coder-1.5b"  # more headroom on dev: issue 39 measured 0.395 (1.5B) vs 0.150 (0.5B), labels alone
    id = ""
    folder = ""
    env_var = ""
    label_file = ""
    oos_label: str | None = None

    def __init__(self, variant: str | None = None, *, data_dir: str | Path | None = None):
        if variant:
            raise BenchmarkError(f"{self.id} has no variants; got {self.id}/{variant}")
        self.data_dir = data_dir
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._labels: list[str] | None = None

    # ---- data -----------------------------------------------------------------------------------------------
    def root(self) -> Path:
        return resolve_data_dir(self.folder, self.env_var, self.data_dir, required=(*SPLIT_FILES, self.label_file))

    def read_labels(self, path: Path) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def labels(self) -> list[str]:
        """Every label, in the dataset's order (the out-of-scope label last, where there is one)."""
        if self._labels is None:
            path = self.root() / self.label_file
            try:
                labels = self.read_labels(path)
            except (OSError, ValueError, TypeError, AttributeError) as exc:
                raise BenchmarkError(f"cannot read the labels of {self.id} from {path}: {exc}") from None
            if len(set(labels)) != len(labels) or not labels:
                raise BenchmarkError(f"{path}: the label list is empty or repeats a label")
            self._labels = labels + ([self.oos_label] if self.oos_label and self.oos_label not in labels else [])
        return self._labels

    def rows(self, split: str) -> list[dict[str, Any]]:
        if split not in SPLITS:
            raise BenchmarkError(f"unknown split {split!r} for {self.id}; use train, dev or test")
        if split not in self._rows:
            path = self.root() / f"{split}.jsonl"
            rows = list(read_jsonl(path, required=("id", "text", "label")))
            known = {label.lower() for label in self.labels}
            for row in rows:
                if str(row["label"]).lower() not in known:
                    raise BenchmarkError(f"{path}: row {row['id']!r} has the label {row['label']!r}, which is not "
                                         f"in {self.label_file}")
            self._rows[split] = rows
        return self._rows[split]

    def tasks(self, split: str, n: int | None = None) -> list[Task]:
        rows = self.rows(split)
        rows = rows if n is None else rows[:n]
        return [Task(id=f"{self.id}/{split}/{r['id']}", split=split, inputs={"message": str(r["text"]).strip()},
                     gold=r["label"], meta={k: v for k, v in r.items() if k not in ("id", "text", "label")})
                for r in rows]

    def label_counts(self, split: str = "train") -> Counter:
        return Counter(r["label"] for r in self.rows(split))

    # ---- metric ---------------------------------------------------------------------------------------------
    def canonical(self, label: str | None) -> str | None:
        """The dataset's spelling of ``label`` (matched case-insensitively), or None when it is no label."""
        if label is None:
            return None
        by_lower = {x.lower(): x for x in self.labels}
        return by_lower.get(label.strip().lower())

    def metric(self, task: Task, output: Any, episode: Episode | None = None) -> MetricResult:  # noqa: ARG002
        gold = str(task.gold)
        raw, exact = output_label(output)
        predicted = self.canonical(raw)
        correct = predicted is not None and predicted.lower() == gold.lower()
        tags: list[str] = []
        if predicted is None or not exact:
            tags.append("invalid_label")
        if not correct:
            tags.append(f"confused:{gold}->{predicted or 'none'}")
            if self.oos_label is not None:
                if gold == self.oos_label:
                    tags.append("missed_oos")
                elif predicted == self.oos_label:
                    tags.append("false_oos")
        message = task.inputs.get("message", "")
        if correct:
            feedback = f"Correct: {message!r} is {gold}."
        else:
            said = predicted if predicted is not None else f"no label (reply {raw!r})"
            feedback = f"Wrong: {message!r} was routed to {said}; the right intent is {gold}."
        if predicted is not None and not exact:
            feedback += f" The reply was not a label; it was mapped to the nearest one, {predicted}."
        return MetricResult(score=float(correct), success=correct, feedback=feedback,
                            details={"gold": gold, "predicted": predicted, "exact": exact, "tags": tags})

    def summary_metrics(self, pairs: list[tuple[str, str | None]]) -> dict[str, float]:
        """Aggregates over ``(gold, predicted)`` pairs: accuracy and, with an out-of-scope label, in-scope accuracy
        and out-of-scope recall."""
        if not pairs:
            return {}
        hit = [g.lower() == (p or "").lower() for g, p in pairs]
        out = {"accuracy": sum(hit) / len(hit)}
        if self.oos_label is not None:
            inscope = [h for (g, _), h in zip(pairs, hit) if g != self.oos_label]
            oos = [h for (g, _), h in zip(pairs, hit) if g == self.oos_label]
            if inscope:
                out["in_scope_accuracy"] = sum(inscope) / len(inscope)
            if oos:
                out["oos_recall"] = sum(oos) / len(oos)
        return out


def read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)
