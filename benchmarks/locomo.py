"""LoCoMo (very long-term conversational memory; research / non-commercial use only, see SOURCE.md).

Data: ``shared/data/locomo/{conversations,qa}.jsonl`` (10 conversations, 1,986 questions), found via ``data_dir=``,
``$NLGRAD_LOCOMO_DIR``, then ``../shared/data/locomo``.

Split by conversation, so no conversation's memory leaks across splits (fixed; sizes in questions):

- train: conv-26, conv-30, conv-41, conv-42 (757)
- dev:   conv-43, conv-44, conv-47 (590)
- test:  conv-48, conv-49, conv-50 (639)

Within a split the questions are sorted by (conversation, question index) and then shuffled once with
``random.Random(0)``, so ``tasks(split, n)`` (the first ``n``) mixes conversations and categories and is the same on
every run. Variants ``locomo/<category name>`` (``single_hop``, ``multi_hop``, ``temporal``, ``open_domain``,
``adversarial``) keep one category, in the same order.

Categories (SOURCE.md; the mapping is the paper's column order): 1 multi-hop, 2 temporal, 3 open-domain /
commonsense, 4 single-hop, 5 adversarial (unanswerable). Metric: token F1 against the gold answer (SQuAD
normalization, no stemming); success = F1 >= 0.5. Category 5 expects a refusal ("Not mentioned in the conversation"):
score 1 when the answer is a refusal (or, for the 2 category-5 rows that carry a gold answer, matches it exactly),
else 0. ``details`` carries ``category`` / ``category_name``; :func:`scores_by_category` summarizes results.
Failure tags (``details["tags"]``, for NLPG's tag groups): ``answer:answered_unanswerable`` (and
``answer:repeated_distractor``), ``answer:refused_answerable``, ``answer:sentence_not_span``, ``answer:empty``,
``retrieval:missed_evidence``.
"""

from __future__ import annotations

import random
import re
import threading
from pathlib import Path
from typing import Any, Iterable

from nlgrad.benchmarks.qa_metrics import (exact_match, human_policy_path, is_refusal, normalize_answer, read_jsonl,
                                          resolve_data_dir, token_f1)
from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import SPLITS, Episode, MetricResult, Task
from nlgrad.text import as_text

ENV_VAR = "NLGRAD_LOCOMO_DIR"
FILES = ("conversations.jsonl", "qa.jsonl")
SPLIT_CONVERSATIONS: dict[str, tuple[str, ...]] = {
    "train": ("conv-26", "conv-30", "conv-41", "conv-42"),
    "dev": ("conv-43", "conv-44", "conv-47"),
    "test": ("conv-48", "conv-49", "conv-50"),
}
CATEGORY_NAMES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop", 5: "adversarial"}
ADVERSARIAL = 5
SUCCESS_F1 = 0.5
_QID = re.compile(r"-q(\d+)$")


def short_date(date_time: str) -> str:
    """"1:56 pm on 8 May, 2023" -> "8 May 2023" (unchanged when it has another shape)."""
    text = date_time.split(" on ", 1)[-1] if " on " in date_time else date_time
    return " ".join(text.replace(",", "").split())


class LocomoBenchmark:
    kind = "static"
    default_program = "locomo_rag"
    human_policy: Path = human_policy_path("locomo")

    def __init__(self, variant: str | None = None, *, data_dir: str | Path | None = None):
        names = {v: k for k, v in CATEGORY_NAMES.items()}
        if variant not in (None, "") and variant not in names:
            raise BenchmarkError(f"unknown locomo variant {variant!r}; use locomo or locomo/<category>, category one "
                                 f"of {', '.join(names)}")
        self.category = names.get(variant) if variant else None
        self.id = f"locomo/{variant}" if variant else "locomo"
        self.data_dir = data_dir
        self._lock = threading.Lock()
        self._conversations: dict[str, dict[str, Any]] | None = None
        self._qa: list[dict[str, Any]] | None = None

    # ---- data ------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        with self._lock:
            if self._qa is not None:
                return
            root = resolve_data_dir("locomo", ENV_VAR, self.data_dir, required=FILES)
            conversations = {c["sample_id"]: c for c in read_jsonl(root / "conversations.jsonl", unique="sample_id")}
            qa = list(read_jsonl(root / "qa.jsonl", unique="qid"))
            missing = sorted({q["sample_id"] for q in qa} - set(conversations))
            if missing:
                raise BenchmarkError(f"{root / 'qa.jsonl'} refers to conversations missing from "
                                     f"conversations.jsonl: {missing}")
            self._conversations, self._qa = conversations, qa

    def conversation(self, sample_id: str) -> dict[str, Any]:
        self._load()
        assert self._conversations is not None
        if sample_id not in self._conversations:
            raise BenchmarkError(f"locomo has no conversation {sample_id!r}")
        return self._conversations[sample_id]

    def turns(self, sample_id: str) -> list[dict[str, Any]]:
        """Every turn of a conversation in order, with its session number and short session date."""
        out = []
        for session in self.conversation(sample_id)["sessions"]:
            date = short_date(session.get("date_time", ""))
            for turn in session["turns"]:
                out.append({"dia_id": turn.get("dia_id", ""), "session": session.get("session"), "date": date,
                            "speaker": turn.get("speaker", ""), "text": turn.get("text", ""),
                            "caption": turn.get("blip_caption", "")})
        return out

    def questions(self, split: str) -> list[dict[str, Any]]:
        if split not in SPLITS:
            raise BenchmarkError(f"unknown split {split!r} for {self.id}; use train, dev or test")
        self._load()
        assert self._qa is not None
        convs = SPLIT_CONVERSATIONS[split]
        rows = [q for q in self._qa if q["sample_id"] in convs]
        rows.sort(key=lambda q: (convs.index(q["sample_id"]), _qindex(q["qid"])))
        random.Random(0).shuffle(rows)
        if self.category is not None:
            rows = [q for q in rows if q["category"] == self.category]
        return rows

    def tasks(self, split: str, n: int | None = None) -> list[Task]:
        rows = self.questions(split)
        rows = rows if n is None else rows[:n]
        tasks = []
        for q in rows:
            conv = self.conversation(q["sample_id"])
            category = int(q["category"])
            tasks.append(Task(
                id=f"locomo/{split}/{q['qid']}", split=split,
                inputs={"question": q["question"], "sample_id": q["sample_id"],
                        "speakers": [conv.get("speaker_a", ""), conv.get("speaker_b", "")]},
                gold={"answer": q.get("answer"), "adversarial_answer": q.get("adversarial_answer"),
                      "evidence": list(q.get("evidence") or [])},
                meta={"category": category, "category_name": CATEGORY_NAMES.get(category, str(category)),
                      "qid": q["qid"]}))
        return tasks

    # ---- metric ----------------------------------------------------------------------------------------------
    def metric(self, task: Task, output: Any, episode: Episode | None = None) -> MetricResult:  # noqa: ARG002
        category = task.meta["category"]
        gold = task.gold.get("answer")
        predicted = as_text(output).strip()
        refused = is_refusal(predicted)
        evidence = task.gold.get("evidence") or []
        retrieved = [str(d) for d in output.get("dia_ids", [])] if isinstance(output, dict) else []
        found = [d for d in evidence if d in retrieved]
        base = {"category": category, "category_name": CATEGORY_NAMES.get(category, str(category)),
                "gold": gold, "predicted": predicted, "refused": refused, "evidence": evidence,
                "retrieved_dia_ids": retrieved, "evidence_retrieved": len(found)}
        where = (f" Evidence turns {evidence}; retrieved {len(found)} of them"
                 + (f" (missed {[d for d in evidence if d not in retrieved]})." if len(found) < len(evidence) else "."))
        if category == ADVERSARIAL:
            matched_gold = bool(gold) and exact_match(predicted, gold)
            fell = False
            ok = refused or matched_gold
            distractor = task.gold.get("adversarial_answer") or ""
            if ok:
                verdict = "Correct: the answer says the conversation does not contain this."
            elif not predicted:
                verdict = "Wrong: empty answer; this question is unanswerable and needs a 'Not mentioned' reply."
            else:
                fell = bool(distractor) and token_f1(predicted, distractor) > 0
                verdict = ("Wrong: this question is unanswerable from the conversation (it mixes up who did what), so"
                           " the answer should say it is not mentioned"
                           + (f"; the answer repeated the distractor {distractor!r}." if fell else "."))
            feedback = (f"{verdict} Question (adversarial): {task.inputs['question']} "
                        f"Predicted: {predicted!r}.{where}")
            tags = [] if ok else (["answer:empty"] if not predicted else
                                  ["answer:answered_unanswerable"] + (["answer:repeated_distractor"] if fell else []))
            return MetricResult(score=float(ok), success=ok, feedback=feedback,
                                details={**base, "f1": float(ok), "tags": tags})
        f1 = token_f1(predicted, gold)
        ok = f1 >= SUCCESS_F1
        if exact_match(predicted, gold):
            verdict = "Correct (exact match)."
        elif refused:
            verdict = "Wrong: the answer refused, but the conversation does answer this."
        elif not predicted:
            verdict = "Wrong: empty answer."
        elif f1 > 0:
            verdict = f"Partly correct (token F1 {f1:.2f})."
        else:
            verdict = "Wrong: no overlap with the gold answer."
        feedback = (f"{verdict} Question ({base['category_name'].replace('_', '-')}): {task.inputs['question']} "
                    f"Gold answer: {gold!r}. Predicted: {predicted!r}.{where}")
        return MetricResult(score=f1, success=ok, feedback=feedback,
                            details={**base, "f1": round(f1, 4), "normalized_prediction": normalize_answer(predicted),
                                     "tags": answer_tags(predicted, gold, f1, refused, len(found) < len(evidence))})


SPAN_RATIO = 2  # an answer with more than twice the gold's words (and more than 4) is a sentence, not the short answer


def answer_tags(predicted: str, gold: Any, f1: float, refused: bool, missed_evidence: bool) -> list[str]:
    """Stable failure tags of an answerable question's reply (empty when it is right): its form, and retrieval."""
    if f1 >= 1.0:
        return []
    said, wanted = normalize_answer(predicted).split(), normalize_answer(as_text(gold)).split()
    tags = []
    if not predicted:
        tags.append("answer:empty")
    elif refused:
        tags.append("answer:refused_answerable")
    elif len(said) > max(4, SPAN_RATIO * len(wanted)):
        tags.append("answer:sentence_not_span")
    if missed_evidence:
        tags.append("retrieval:missed_evidence")
    return tags


def _qindex(qid: str) -> int:
    m = _QID.search(qid)
    return int(m.group(1)) if m else 0


def scores_by_category(results: Iterable[Any]) -> dict[str, dict[str, float]]:
    """Mean score and count per category name from TaskResults (or dicts with ``score`` and ``details``)."""
    sums: dict[str, list[float]] = {}
    for r in results:
        details = r.get("details", {}) if isinstance(r, dict) else getattr(r, "details", {})
        score = r.get("score", 0.0) if isinstance(r, dict) else getattr(r, "score", 0.0)
        name = (details or {}).get("category_name", "unknown")
        sums.setdefault(name, []).append(float(score))
    return {name: {"n": len(v), "mean": sum(v) / len(v)} for name, v in sorted(sums.items())}
