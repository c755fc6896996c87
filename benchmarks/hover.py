"""HoVer (many-hop claim verification, CC BY-SA 4.0): is a claim SUPPORTED or NOT_SUPPORTED by Wikipedia?

Data: ``shared/data/hover/{train,dev,test}.jsonl``, 200 claims each, all from the official *dev* release (see that
folder's SOURCE.md). ``tasks(split, n)`` returns the first ``n`` rows in file order (already a seeded random sample),
so splits are fixed and disjoint. Found via ``data_dir=``, ``$NLGRAD_HOVER_DIR``, then ``../shared/data/hover``.

Evidence. The release has no evidence text, only supporting-fact titles and sentence ids into the 2017 Wikipedia
abstracts, which are not available offline. What we use instead, and why:

- ``hover`` (default): retrieval corpus = every distinct paragraph of the shared HotpotQA files (train+dev+test,
  5,931 Wikipedia intro paragraphs, one per title). They come from the same 2017 abstract dump HoVer was built on and
  hold no HotpotQA labels, so they are a fair but **very partial** evidence source: only ~5% of the gold supporting
  titles are in it (dev: 38 of 604; 2 of 200 dev claims have all their titles; 12 dev claims have their ``hpqa_id``
  among the shared HotpotQA questions). For most claims the verifier therefore decides from the claim text and what
  the model knows; each task records ``meta["gold_titles_in_corpus"]`` and the feedback says whether the gold
  evidence was retrievable at all, so a critic does not blame the query for evidence that does not exist.
- ``hover/closedbook``: no retrieval; the verifier sees the claim only.

Metric: label accuracy (score 1/0, success = correct). Feedback gives gold vs predicted label, the hop count, the
gold supporting titles, and which of them were retrieved / exist in the corpus.
"""

from __future__ import annotations

import html
import threading
import unicodedata
from pathlib import Path
from typing import Any

from nlgrad.benchmarks.hotpotqa import load_hotpot_rows
from nlgrad.benchmarks.qa_metrics import human_policy_path, read_jsonl, resolve_data_dir
from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import SPLITS, Episode, MetricResult, Task
from nlgrad.text import BM25Index, as_text, first_sentences
from nlgrad.text.verdict import LABELS, parse_label

ENV_VAR = "NLGRAD_HOVER_DIR"
SPLIT_FILES = tuple(f"{s}.jsonl" for s in SPLITS)
VARIANTS = {None: "hotpotqa_pool", "": "hotpotqa_pool", "pool": "hotpotqa_pool", "closedbook": "none"}


def norm_title(title: str) -> str:
    return unicodedata.normalize("NFC", html.unescape(str(title))).strip()


class EvidenceCorpus:
    """Distinct HotpotQA paragraphs (first occurrence of each title, files read train, dev, test) with a BM25 index."""

    def __init__(self, paragraphs: list[dict[str, Any]]):
        self.paragraphs = paragraphs
        self.titles = {norm_title(p["title"]) for p in paragraphs}
        self.index = BM25Index([f"{p['title']} {''.join(p['sentences'])}" for p in paragraphs])

    @classmethod
    def from_hotpotqa(cls, data_dir: str | Path | None = None) -> "EvidenceCorpus":
        seen: dict[str, dict[str, Any]] = {}
        for split, rows in load_hotpot_rows(data_dir).items():  # noqa: B007 - order is train, dev, test
            for row in rows:
                for p in row["context"]:
                    seen.setdefault(norm_title(p["title"]), {"title": p["title"], "sentences": list(p["sentences"])})
        return cls(list(seen.values()))

    def search(self, query: str, k: int = 3) -> list[dict[str, Any]]:
        return [{"title": self.paragraphs[i]["title"], "text": first_sentences(self.paragraphs[i]["sentences"], 3, 300),
                 "score": score} for i, score in self.index.search(query, k)]


_CORPORA: dict[str, EvidenceCorpus] = {}
_CORPUS_LOCK = threading.Lock()


class HoverBenchmark:
    kind = "static"
    default_program = "hover_verify"
    human_policy: Path = human_policy_path("hover")

    def __init__(self, variant: str | None = None, *, data_dir: str | Path | None = None,
                 hotpotqa_dir: str | Path | None = None):
        if variant not in VARIANTS:
            raise BenchmarkError(f"unknown hover variant {variant!r}; use hover (HotpotQA-paragraph evidence) or "
                                 "hover/closedbook (no retrieval)")
        self.evidence = VARIANTS[variant]
        self.id = "hover/closedbook" if self.evidence == "none" else "hover"
        self.data_dir, self.hotpotqa_dir = data_dir, hotpotqa_dir
        self._rows: dict[str, list[dict[str, Any]]] | None = None

    def corpus(self) -> EvidenceCorpus | None:
        """The shared evidence corpus (built once per process), or None for the closed-book variant."""
        if self.evidence == "none":
            return None
        key = str(self.hotpotqa_dir or "")
        with _CORPUS_LOCK:
            if key not in _CORPORA:
                try:
                    _CORPORA[key] = EvidenceCorpus.from_hotpotqa(self.hotpotqa_dir)
                except BenchmarkError as exc:
                    raise BenchmarkError(f"hover uses the HotpotQA paragraphs as its evidence corpus: {exc} "
                                         "(or run hover/closedbook, which needs no corpus)") from None
            return _CORPORA[key]

    def rows(self, split: str) -> list[dict[str, Any]]:
        if split not in SPLITS:
            raise BenchmarkError(f"unknown split {split!r} for {self.id}; use train, dev or test")
        if self._rows is None:
            root = resolve_data_dir("hover", ENV_VAR, self.data_dir, required=SPLIT_FILES)
            fields = ("id", "claim", "label", "supporting_facts")
            self._rows = {s: list(read_jsonl(root / f"{s}.jsonl", required=fields)) for s in SPLITS}
        return self._rows[split]

    def tasks(self, split: str, n: int | None = None) -> list[Task]:
        rows = self.rows(split)
        rows = rows if n is None else rows[:n]
        corpus = self.corpus()
        tasks = []
        for r in rows:
            titles = list(dict.fromkeys(f["title"] for f in r["supporting_facts"]))
            in_corpus = [t for t in titles if corpus is not None and norm_title(t) in corpus.titles]
            tasks.append(Task(id=f"hover/{split}/{r['id']}", split=split, inputs={"claim": r["claim"].strip()},
                              gold={"label": r["label"], "supporting_facts": r["supporting_facts"]},
                              meta={"num_hops": r.get("num_hops"), "hpqa_id": r.get("hpqa_id"),
                                    "gold_titles_in_corpus": len(in_corpus), "evidence": self.evidence}))
        return tasks

    def metric(self, task: Task, output: Any, episode: Episode | None = None) -> MetricResult:  # noqa: ARG002
        gold = task.gold["label"]
        parsed = parse_label(output)
        predicted = parsed["label"] if parsed["matched"] or _has_label(output) else None
        correct = predicted == gold
        titles = list(dict.fromkeys(f["title"] for f in task.gold["supporting_facts"]))
        retrieved = [str(t) for t in output.get("titles", [])] if isinstance(output, dict) else []
        hit = [t for t in titles if norm_title(t) in {norm_title(x) for x in retrieved}]
        shown = predicted or f"no label (unparsable output {as_text(output)[:80]!r})"
        verdict = "Correct" if correct else "Wrong"
        if isinstance(output, dict) and "matched" in output and output.get("matched") is None:
            shown += f" (the verifier reply {str(output.get('reply', ''))[:60]!r} had no label word; default used)"
        feedback = (f"{verdict}: gold label {gold}, predicted {shown}. Claim ({task.meta.get('num_hops')} hops): "
                    f"{task.inputs['claim']} Gold supporting titles: {titles}.")
        if self.evidence != "none":
            in_corpus = task.meta.get("gold_titles_in_corpus", 0)
            feedback += (f" Retrieved titles: {retrieved or '(none)'}; gold titles retrieved: {hit or 'none'}; "
                         f"{in_corpus} of {len(titles)} gold titles exist in the evidence corpus"
                         + (" (so the verdict had to come from the claim and general knowledge)." if not in_corpus
                            else "."))
        return MetricResult(score=float(correct), success=correct, feedback=feedback,
                            details={"gold": gold, "predicted": predicted, "num_hops": task.meta.get("num_hops"),
                                     "gold_titles": titles, "retrieved_titles": retrieved,
                                     "gold_titles_retrieved": len(hit),
                                     "gold_titles_in_corpus": task.meta.get("gold_titles_in_corpus", 0)})


def _has_label(output: Any) -> bool:
    """True when the program committed to a label (its own parser already applied the default)."""
    return isinstance(output, dict) and output.get("label") in LABELS
