"""HotpotQA (distractor setting, CC BY-SA 4.0): multi-hop questions over 10 Wikipedia paragraphs each.

Data: ``shared/data/hotpotqa/{train,dev,test}.jsonl``, 200 questions each, all drawn from the official *dev* set
(see that folder's SOURCE.md). ``tasks(split, n)`` returns the first ``n`` rows of the file, in file order (the files
are already a seeded random sample), so splits are fixed and disjoint. Found via ``data_dir=``, then
``$NLGRAD_HOTPOTQA_DIR``, then ``../shared/data/hotpotqa``.

Optional online mode (never required, never used by tests): the variant ``hotpotqa/hf`` (or ``use_hf=True``, or
``NLGRAD_HOTPOTQA_HF=1``) loads Hugging Face ``hotpot_qa``/``distractor``/``validation`` with the ``datasets``
package, sorts by id, draws ``random.Random(0).sample(rows, 600)`` and splits 200/200/200. That is *not* the same
subset as the shared files.

Metric: answer exact match and token F1 with the official HotpotQA normalization; ``score`` = F1, ``success`` = EM.
Feedback names the gold and predicted answers and the retrieved vs gold supporting titles.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from nlgrad.benchmarks.qa_metrics import (exact_match, human_policy_path, normalize_answer, read_jsonl,
                                          resolve_data_dir, token_f1)
from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import SPLITS, Episode, MetricResult, Task
from nlgrad.text import as_text

ENV_VAR = "NLGRAD_HOTPOTQA_DIR"
HF_FLAG = "NLGRAD_HOTPOTQA_HF"
SPLIT_FILES = tuple(f"{s}.jsonl" for s in SPLITS)


def load_hotpot_rows(data_dir: str | Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """All rows of the shared files, by split, in file order."""
    root = resolve_data_dir("hotpotqa", ENV_VAR, data_dir, required=SPLIT_FILES)
    fields = ("id", "question", "answer", "supporting_facts", "context")
    return {split: list(read_jsonl(root / f"{split}.jsonl", required=fields)) for split in SPLITS}


def _load_hf_rows(size: int = 200) -> dict[str, list[dict[str, Any]]]:
    try:
        import datasets  # type: ignore[import-not-found]
    except ImportError:
        raise BenchmarkError("hotpotqa/hf needs the package datasets (pip install datasets) and network access; "
                             f"without it use the shared files (unset {HF_FLAG})") from None
    try:
        raw = datasets.load_dataset("hotpot_qa", "distractor", split="validation")
    except Exception as exc:  # noqa: BLE001 - offline, hub errors, ...
        raise BenchmarkError(f"could not load hotpot_qa/distractor from Hugging Face: {exc}") from None
    rows = []
    for r in raw:
        ctx, sf = r["context"], r["supporting_facts"]
        rows.append({"id": r["id"], "question": r["question"], "answer": r["answer"], "type": r["type"],
                     "level": r["level"],
                     "supporting_facts": [{"title": t, "sent_id": s} for t, s in zip(sf["title"], sf["sent_id"])],
                     "context": [{"title": t, "sentences": list(s)} for t, s in zip(ctx["title"], ctx["sentences"])]})
    rows.sort(key=lambda r: r["id"])
    sample = random.Random(0).sample(rows, 3 * size)
    return {split: sample[i * size:(i + 1) * size] for i, split in enumerate(SPLITS)}


def gold_titles(row_or_task: Any) -> list[str]:
    facts = row_or_task["supporting_facts"] if isinstance(row_or_task, dict) else row_or_task.gold["supporting_facts"]
    return list(dict.fromkeys(f["title"] for f in facts))


class HotpotQABenchmark:
    kind = "static"
    default_program = "hotpot_multihop"
    human_policy: Path = human_policy_path("hotpotqa")

    def __init__(self, variant: str | None = None, *, data_dir: str | Path | None = None, use_hf: bool | None = None):
        if variant not in (None, "", "hf"):
            raise BenchmarkError(f"unknown hotpotqa variant {variant!r}; use hotpotqa (shared files) or hotpotqa/hf")
        if use_hf is None:
            use_hf = variant == "hf" or os.environ.get(HF_FLAG, "").lower() in ("1", "true", "yes")
        self.use_hf = bool(use_hf)
        self.id = "hotpotqa/hf" if self.use_hf else "hotpotqa"
        self.data_dir = data_dir
        self._rows: dict[str, list[dict[str, Any]]] | None = None

    def rows(self, split: str) -> list[dict[str, Any]]:
        if split not in SPLITS:
            raise BenchmarkError(f"unknown split {split!r} for {self.id}; use train, dev or test")
        if self._rows is None:
            self._rows = _load_hf_rows() if self.use_hf else load_hotpot_rows(self.data_dir)
        return self._rows[split]

    def tasks(self, split: str, n: int | None = None) -> list[Task]:
        rows = self.rows(split)
        rows = rows if n is None else rows[:n]
        return [Task(id=f"hotpotqa/{split}/{r['id']}", split=split,
                     inputs={"question": r["question"], "context": r["context"]},
                     gold={"answer": r["answer"], "supporting_facts": r["supporting_facts"]},
                     meta={"type": r.get("type"), "level": r.get("level"), "hotpot_id": r["id"]})
                for r in rows]

    def metric(self, task: Task, output: Any, episode: Episode | None = None) -> MetricResult:  # noqa: ARG002
        gold = task.gold["answer"]
        predicted = as_text(output).strip()
        em, f1 = exact_match(predicted, gold), token_f1(predicted, gold)
        retrieved = _retrieved_titles(output)
        wanted = gold_titles(task)
        found = [t for t in wanted if t in retrieved]
        missed = [t for t in wanted if t not in retrieved]
        if em:
            verdict = "Correct (exact match)."
        elif not predicted:
            verdict = "Wrong: the answer was empty."
        elif f1 > 0:
            verdict = f"Partly correct (token F1 {f1:.2f}): the answer does not match the gold span exactly."
        else:
            verdict = "Wrong: no overlap with the gold answer."
        if missed:
            retrieval = (f"Retrieval missed gold paragraph(s) {missed}; retrieved {retrieved or '(none)'}; "
                         f"gold supporting titles {wanted}.")
        else:
            retrieval = f"Retrieval found all gold supporting titles {wanted} (retrieved {retrieved})."
        feedback = (f"{verdict} Question: {task.inputs['question']} Gold answer: {gold!r}. "
                    f"Predicted answer: {predicted!r}. {retrieval}")
        return MetricResult(score=f1, success=em, feedback=feedback,
                            details={"tags": answer_tags(predicted, gold, em, missed),
                                     "em": em, "f1": round(f1, 4), "gold": gold, "predicted": predicted,
                                     "normalized_prediction": normalize_answer(predicted),
                                     "retrieved_titles": retrieved, "gold_titles": wanted,
                                     "gold_titles_retrieved": len(found), "type": task.meta.get("type")})


SPAN_WORDS = 8  # an answer longer than this is a sentence, not the short span HotpotQA's gold answers are


def answer_tags(predicted: str, gold: str, em: bool, missed_titles: list[str]) -> list[str]:
    """Stable failure tags of one answer (empty when it is right): its form against the gold's, and retrieval."""
    if em:
        return []
    tags = []
    yes_no = {"yes", "no"}
    said, wanted = normalize_answer(predicted), normalize_answer(gold)
    if not said:
        tags.append("answer:empty")
    elif len(said.split()) > SPAN_WORDS:
        tags.append("answer:sentence_not_span")
    if wanted in yes_no and said not in yes_no:
        tags.append("answer:entity_for_yes_no")
    elif wanted not in yes_no and said in yes_no:
        tags.append("answer:yes_no_for_entity")
    if missed_titles:
        tags.append("retrieval:missed_gold_title")
    return tags


def _retrieved_titles(output: Any) -> list[str]:
    if isinstance(output, dict) and isinstance(output.get("titles"), (list, tuple)):
        return [str(t) for t in output["titles"]]
    return []
