"""Offline stand-ins for the NLTK resources the instruction-following checkers use (nothing is downloaded).

The upstream checkers call NLTK's Punkt sentence models, the stopword corpus and the perceptron POS tagger, and call
``nltk.download`` at import and check time. This module replaces them (see :mod:`nlgrad.benchmarks.if_common` for
how each stand-in differs from the original): a regex sentence splitter, NLTK's own Treebank word tokenizer over its
sentences, the shipped stopword and verb lists, a lexicon POS tagger, an ``nltk`` module stand-in for the checker
modules, and :data:`CHECKER_RANDOM`, a per-check reseeded ``random`` so checks with random parameters are stable.
"""

from __future__ import annotations

import contextlib
import random
import re
import sys
import threading
import types
from functools import lru_cache
from importlib.resources import files
from typing import Any, Iterable, Iterator

# --------------------------------------------------------------------------------------------------------------
# Shipped word lists
# --------------------------------------------------------------------------------------------------------------


def _data_text(name: str) -> str:
    return files("nlgrad.benchmarks").joinpath(f"data/{name}").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """NLTK's English stopword list (shipped; see the module docstring)."""
    return frozenset(line.strip() for line in _data_text("english_stopwords.txt").splitlines() if line.strip())


def _inflections(base: str) -> set[str]:
    forms = {base}
    if re.search(r"(s|x|z|ch|sh|o)$", base):
        forms.add(base + "es")
    elif re.search(r"[^aeiou]y$", base):
        forms.add(base[:-1] + "ies")
    else:
        forms.add(base + "s")
    if base.endswith("e"):
        forms |= {base + "d", base[:-1] + "ing"}
    elif re.search(r"[^aeiou]y$", base):
        forms |= {base[:-1] + "ied", base + "ing"}
    else:
        forms |= {base + "ed", base + "ing"}
        if re.search(r"(^|[^aeiou])[aeiou][bdgklmnprt]$", base):  # stop -> stopped, plan -> planning
            forms |= {base + base[-1] + "ed", base + base[-1] + "ing"}
    return forms


@lru_cache(maxsize=1)
def verb_forms() -> frozenset[str]:
    """Lowercase verb forms known to the offline POS stand-in."""
    words: set[str] = set()
    for line in _data_text("english_verbs.txt").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("irregular:"):
            words |= set(line.removeprefix("irregular:").split())
        else:
            for base in line.split():
                words |= _inflections(base)
    return frozenset(words)


# --------------------------------------------------------------------------------------------------------------
# Offline replacements for the NLTK resources the checkers use
# --------------------------------------------------------------------------------------------------------------

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e eg ie inc ltd co corp no nos fig figs approx dept est mt ave blvd rd "
    "gen col capt lt sgt rev hon gov sen rep jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat "
    "sun al cf ed eds vol vols pp p ch sec ca op cit viz ft oz lb lbs min max"
    .split()
)
_BOUNDARY = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s|$)")
_LAST_TOKEN = re.compile(r"(\S+)$")


def split_sentences(text: str) -> list[str]:
    """Offline, Punkt-like English sentence splitter (see the module docstring for what it does and does not do)."""
    text = (text or "").strip()
    if not text:
        return []
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        mark = match.group()
        if mark.rstrip("\"'\u201d\u2019)]") == ".":
            last = _LAST_TOKEN.search(text[start:match.start()])
            token = last.group(1).lower().lstrip("([\"'\u201c\u2018") if last else ""
            if (token in _ABBREVIATIONS or re.fullmatch(r"[a-z]", token)  # "Mr." / initial "J."
                    or re.fullmatch(r"(?:[a-z]\.)+[a-z]", token)):  # "U.S." / "e.g."
                following = text[match.end():].lstrip()
                # an abbreviation ends a sentence only when it is the last thing in the text
                if following:
                    continue
        sentence = text[start:match.end()].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


@lru_cache(maxsize=1)
def _treebank():
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


def word_tokenize(text: str, language: str = "english", preserve_line: bool = False) -> list[str]:  # noqa: ARG001
    """NLTK's ``word_tokenize`` (Treebank tokenizer) over :func:`split_sentences` instead of Punkt."""
    sentences = [text] if preserve_line else split_sentences(text)
    return [token for sentence in sentences for token in _treebank().tokenize(sentence)]


def sent_tokenize(text: str, language: str = "english") -> list[str]:  # noqa: ARG001
    return split_sentences(text)


def is_verb(token: str) -> bool:
    return token.lower() in verb_forms()


def pos_tag(tokens: Iterable[str], tagset: str | None = None,  # noqa: ARG001 - nltk.pos_tag's signature
            lang: str = "eng") -> list[tuple[str, str]]:  # noqa: ARG001
    """Lexicon stand-in for ``nltk.pos_tag``: ``VB`` for known verb forms, ``NN`` otherwise."""
    return [(token, "VB" if is_verb(token) else "NN") for token in tokens]


_WORDS = re.compile(r"\w+")


def count_words(text: str) -> int:
    """Word count as the checkers compute it (``RegexpTokenizer(r"\\w+")``)."""
    return len(_WORDS.findall(text or ""))


def count_stopwords(text: str) -> int:
    """Stopword count as IFBench computes it, with the shipped list instead of the NLTK corpus download."""
    words = stopwords()
    return sum(1 for token in _WORDS.findall(text or "") if token.lower() in words)


def count_sentences(text: str) -> int:
    return len(split_sentences(text))


class CheckerRandom:
    """Stands in for the ``random`` module inside the checker modules: a per-thread ``random.Random``.

    Upstream ``build_description`` draws a random parameter when the data's value is missing or invalid (e.g.
    IFEval's ``keywords:letter_frequency`` with letter "#"), which makes official scoring of those few items vary
    between runs. :func:`check_instructions` reseeds this generator from the instruction, its kwargs and the prompt
    before each check, so the draw - and the score - is the same every time.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def _rng(self) -> random.Random:
        rng = getattr(self._local, "rng", None)
        if rng is None:
            rng = self._local.rng = random.Random(0)
        return rng

    def reseed(self, key: str) -> None:
        self._rng().seed(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rng(), name)


CHECKER_RANDOM = CheckerRandom()

_langdetect_lock = threading.Lock()


def ready_langdetect() -> None:
    """Seed ``langdetect`` (``DetectorFactory.seed = 0``) and load its language profiles now, once, under a lock.

    ``langdetect.detect`` loads the profiles lazily and not thread-safely: ``init_factory`` publishes the factory
    before its profiles are loaded, so checks running side by side in an eval's worker threads could detect from a
    partial profile set (English text read as Afrikaans or Polish) and score a task differently from run to run."""
    import langdetect
    from langdetect import detector_factory

    with _langdetect_lock:
        langdetect.DetectorFactory.seed = 0
        detector_factory.init_factory()


def _no_download(*args: Any, **kwargs: Any) -> bool:  # noqa: ARG001
    return True


class OfflineNLTK(types.ModuleType):
    """Stands in for the ``nltk`` module inside the checker modules: offline tokenizers, tagger and downloads."""

    def __init__(self, real: types.ModuleType):
        super().__init__("nltk")
        self._real = real
        self.download = _no_download
        self.word_tokenize = word_tokenize
        self.sent_tokenize = sent_tokenize
        self.pos_tag = pos_tag

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextlib.contextmanager
def offline_checker_import() -> Iterator[None]:
    """While importing upstream checker modules: no ``nltk.download`` and a stub ``spacy.cli.download``.

    IFBench's ``instructions.py`` runs ``spacy.cli.download('en_core_web_sm')`` at import (a network install) but
    never uses spaCy otherwise, and its ``instructions_util`` downloads Punkt at import. Both are neutralised here
    and restored afterwards.
    """
    import nltk

    real_download = nltk.download
    saved = {name: sys.modules.get(name) for name in ("spacy", "spacy.cli")}
    spacy = types.ModuleType("spacy")
    spacy_cli = types.ModuleType("spacy.cli")
    spacy_cli.download = lambda *a, **k: None  # type: ignore[attr-defined]
    spacy.cli = spacy_cli  # type: ignore[attr-defined]
    sys.modules["spacy"], sys.modules["spacy.cli"] = spacy, spacy_cli
    nltk.download = _no_download
    try:
        yield
    finally:
        nltk.download = real_download
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


class SentenceTokenizer:
    """Stands in for NLTK's punkt tokenizer inside the upstream checkers (offline regex splitter)."""

    @staticmethod
    def tokenize(text: str) -> list[str]:
        return split_sentences(text)
