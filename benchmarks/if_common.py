"""Shared machinery of the instruction-following benchmarks (``ifbench`` and ``ifeval``).

Both benchmarks score a free-text response against a list of verifiable instructions (``instruction_id_list`` with
one ``kwargs`` dict each) using the upstream checker classes, in *strict* mode: the response is checked as it is,
an empty response follows nothing. This module holds what the two share:

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
  ``success = all followed``, and writes feedback naming each violated instruction id with its kwargs and, where
  it can be measured, what the response actually did ("response has 212 words"). A missing, empty or malformed
  output scores 0 with a clear feedback and never raises; a checker that raises counts as not followed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import string
import sys
import threading
import types
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import SPLITS, Episode, MetricResult, Task

SPLIT_FRACTIONS: dict[str, float] = {"train": 0.4, "dev": 0.3, "test": 0.3}
MAX_KWARG_CHARS = 60

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
_PRONOUNS = frozenset(
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers "
    "herself it its itself they them their theirs themselves".split()
)


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


def missing_package_error(benchmark: str, package: str, module: str, exc: BaseException) -> BenchmarkError:
    return BenchmarkError(
        f"benchmark {benchmark} needs the Python package {package} (module {module!r} could not be imported: "
        f"{type(exc).__name__}: {exc}). Install it without its heavy dependencies: "
        f"pip install --no-deps {package} && pip install nltk langdetect immutabledict emoji syllapy"
    )


# --------------------------------------------------------------------------------------------------------------
# Data and splits
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    key: str
    prompt: str
    instruction_ids: tuple[str, ...]
    kwargs: tuple[dict[str, Any], ...]


def read_prompts(path: Path, benchmark: str) -> list[Prompt]:
    """Read an IFEval-format JSONL file (``key``, ``prompt``, ``instruction_id_list``, ``kwargs`` per line)."""
    if not path.is_file():
        raise BenchmarkError(f"benchmark {benchmark}: prompt file not found: {path}")
    prompts: list[Prompt] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
                key, prompt = str(row["key"]), row["prompt"]
                ids, kwargs = list(row["instruction_id_list"]), list(row["kwargs"])
            except (ValueError, KeyError, TypeError) as exc:
                raise BenchmarkError(f"benchmark {benchmark}: bad record at {where}: {type(exc).__name__}: {exc}"
                                     ) from None
            if not isinstance(prompt, str) or len(ids) != len(kwargs) or not ids:
                raise BenchmarkError(f"benchmark {benchmark}: bad record at {where}: needs a prompt string and one "
                                     f"kwargs dict per instruction id")
            if key in seen:
                raise BenchmarkError(f"benchmark {benchmark}: duplicate key {key!r} at {where}")
            seen.add(key)
            cleaned = tuple({k: v for k, v in (kw or {}).items() if v is not None} for kw in kwargs)
            prompts.append(Prompt(key=key, prompt=prompt, instruction_ids=tuple(ids), kwargs=cleaned))
    if not prompts:
        raise BenchmarkError(f"benchmark {benchmark}: no prompts in {path}")
    return prompts


def split_keys(keys: Iterable[str], salt: str, fractions: dict[str, float] | None = None) -> dict[str, list[str]]:
    """Deterministic disjoint splits: order keys by ``sha256(salt:key)``, cut at the fractions (train/dev/test)."""
    fractions = fractions or SPLIT_FRACTIONS
    ordered = sorted(set(keys), key=lambda k: (hashlib.sha256(f"{salt}:{k}".encode()).hexdigest(), k))
    n = len(ordered)
    n_train = round(n * fractions["train"])
    n_dev = round(n * fractions["dev"])
    return {"train": ordered[:n_train], "dev": ordered[n_train:n_train + n_dev], "test": ordered[n_train + n_dev:]}


# --------------------------------------------------------------------------------------------------------------
# Checking and feedback
# --------------------------------------------------------------------------------------------------------------


@dataclass
class InstructionOutcome:
    instruction_id: str
    kwargs: dict[str, Any]
    followed: bool
    description: str = ""
    fact: str = ""
    error: str | None = None

    def label(self) -> str:
        shown = format_kwargs(self.kwargs)
        return f"{self.instruction_id} ({shown})" if shown else self.instruction_id

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.instruction_id, "kwargs": self.kwargs, "followed": self.followed,
                "fact": self.fact, "error": self.error}


def _plain(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _short(value: Any) -> str:
    text = ", ".join(map(_plain, value)) if isinstance(value, (list, tuple)) else _plain(value)
    text = " ".join(text.split())
    return text if len(text) <= MAX_KWARG_CHARS else text[:MAX_KWARG_CHARS - 3] + "..."


def format_kwargs(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in kwargs.items() if v is not None and k != "prompt")


def check_instructions(registry: dict[str, type], prompt: str, ids: Iterable[str], kwargs_list: Iterable[dict],
                       response: str) -> list[InstructionOutcome]:
    """Strict-mode check of each instruction, as upstream ``test_instruction_following_strict`` does it.

    Unknown ids and checkers that raise count as not followed (recorded in ``error``) instead of failing the task.
    """
    outcomes: list[InstructionOutcome] = []
    for instruction_id, kwargs in zip(ids, kwargs_list):
        kwargs = {k: v for k, v in dict(kwargs).items() if v is not None}
        outcome = InstructionOutcome(instruction_id, kwargs, followed=False)
        cls = registry.get(instruction_id)
        if cls is None:
            outcome.error = "unknown instruction id (no checker)"
            outcomes.append(outcome)
            continue
        try:
            CHECKER_RANDOM.reseed(f"{instruction_id}|{json.dumps(kwargs, sort_keys=True, default=str)}|{prompt}")
            instruction = cls(instruction_id)
            outcome.description = str(instruction.build_description(**kwargs) or "")
            args = instruction.get_instruction_args()
            if args and "prompt" in args:
                instruction.build_description(prompt=prompt)
            outcome.followed = bool(response.strip()) and bool(instruction.check_following(response))
        except Exception as exc:  # noqa: BLE001 - a checker crash is a failed instruction, not a crashed task
            outcome.followed = False
            outcome.error = f"checker raised {type(exc).__name__}: {_short(exc)}"
        if not outcome.followed and response.strip():
            outcome.fact = measure(instruction_id, kwargs, response, prompt)
        outcomes.append(outcome)
    return outcomes


def _count(pattern: str, text: str, flags: int = 0) -> int:
    return len(re.findall(pattern, text, flags))


def _paragraphs_blank(text: str) -> list[str]:
    return [p for p in re.split(r"\n\n", text) if p.strip()]


def _highlights(text: str) -> int:
    single = [h for h in re.findall(r"\*[^\n\*]*\*", text) if h.strip("*").strip()]
    double = [h for h in re.findall(r"\*\*[^\n\*]*\*\*", text) if h.strip("*").strip()]
    return len(single) + len(double)


def _language(text: str) -> str:
    try:
        import langdetect

        return langdetect.detect(text)
    except Exception:  # noqa: BLE001
        return "unknown"


def _end(text: str) -> str:
    tail = text.strip().strip('"')
    return tail[-40:]


def _facts() -> dict[str, Callable[[dict[str, Any], str, str], str]]:
    def words(kw, r, p):
        return f"response has {count_words(r)} words"

    def sentences(kw, r, p):
        return f"response has {count_sentences(r)} sentences"

    def star_paragraphs(kw, r, p):
        parts = [x for x in re.split(r"\s?\*\*\*\s?", r) if x.strip()]
        return f"response has {len(parts)} paragraphs separated by the markdown divider ***"

    def nth_first(kw, r, p):
        paras = _paragraphs_blank(r)
        n = int(kw.get("nth_paragraph", 0) or 0)
        first = paras[n - 1].split()[0] if 0 < n <= len(paras) and paras[n - 1].split() else "(none)"
        return (f"response has {len(paras)} paragraphs separated by blank lines; paragraph {n} starts with "
                f"{first!r}")

    def forbidden(kw, r, p):
        found = [w for w in kw.get("forbidden_words", []) if re.search(r"\b" + re.escape(w) + r"\b", r, re.I)]
        return f"response uses forbidden words: {', '.join(found)}" if found else ""

    def existence(kw, r, p):
        missing = [w for w in kw.get("keywords", []) if not re.search(re.escape(w), r, re.I)]
        return f"response lacks keywords: {', '.join(missing)}" if missing else ""

    def frequency(kw, r, p):
        return f"{kw.get('keyword')!r} appears {_count(re.escape(str(kw.get('keyword', ''))), r, re.I)} times"

    def letter(kw, r, p):
        return f"letter {kw.get('letter')!r} appears {Counter(r.lower())[str(kw.get('letter', '')).lower()]} times"

    def caps(kw, r, p):
        return f"response has {sum(1 for w in word_tokenize(r) if w.isupper())} all-capital words"

    def multiples(kw, r, p):
        counts = [f"{kw.get(f'keyword{i}')!r} x{r.lower().count(str(kw.get(f'keyword{i}', '')).lower())}"
                  f" (needs {need})" for i, need in zip(range(1, 6), (1, 2, 3, 5, 7))]
        return "counts: " + ", ".join(counts)

    def unique(kw, r, p):
        uniq = {w.strip(string.punctuation + " ") for w in r.lower().split()}
        return f"response has {len(uniq)} unique words"

    def stop_ratio(kw, r, p):
        n = count_words(r)
        return f"stopwords are {100 * count_stopwords(r) / n:.0f}% of {n} words" if n else "response has no words"

    def upstream_sentences(text):
        util = sys.modules.get("ifbench.instructions_util")  # IFBench's own regex splitter, when it is loaded
        return util.split_into_sentences(text) if util is not None else split_sentences(text)

    def keyword_sentence(kw, r, p):
        sents = upstream_sentences(r)
        word = str(kw.get("word", "")).lower()
        where = [str(i) for i, x in enumerate(sents, 1) if word and word in x.lower()]
        return (f"response has {len(sents)} sentences; {kw.get('word')!r} is in sentence(s) "
                f"{', '.join(where) or 'none'}")

    def increment(kw, r, p):
        counts = [len(x.translate(str.maketrans("", "", string.punctuation)).split()) for x in upstream_sentences(r)]
        return f"words per sentence: {', '.join(map(str, counts[:12]))}" + (" ..." if len(counts) > 12 else "")

    def conjunctions(kw, r, p):
        conj = {"and", "but", "for", "nor", "or", "so", "yet"}
        found = sorted({w for w in r.split() if w.strip(string.punctuation + " ").lower() in conj})  # as upstream
        return f"response uses {len(found)} different coordinating conjunctions ({', '.join(found) or 'none'})"

    def numbers(kw, r, p):
        found = re.findall(r"[0-9]+", r.translate(str.maketrans("", "", string.punctuation)))
        return f"response contains {len(found)} numbers"

    def pronouns(kw, r, p):
        words = r.replace("/", " ").lower().translate(str.maketrans("", "", string.punctuation)).split()
        return f"response has {sum(1 for w in words if w in _PRONOUNS)} pronouns"

    def nesting(kw, r, p):
        depth = best = 0
        for ch in r:
            if ch in "([{":
                depth += 1
                best = max(best, depth)
            elif ch in ")]}":
                depth = max(0, depth - 1)
        return f"deepest bracket nesting in the response is {best} levels"

    def repeats(kw, r, p):
        counts = Counter(r.lower().translate(str.maketrans("", "", string.punctuation)).split())
        word, n = counts.most_common(1)[0] if counts else ("", 0)
        return f"{word!r} appears {n} times" if word else ""

    def consecutive(kw, r, p):
        words = r.lower().translate(str.maketrans("", "", string.punctuation)).split()
        pair = next((f"{a} {b}" for a, b in zip(words, words[1:]) if a[0] == b[0]), "")
        return f"consecutive words {pair!r} start with the same letter" if pair else ""

    def bullets(kw, r, p):
        n = _count(r"^\s*\*[^\*].*$", r, re.M) + _count(r"^\s*-.*$", r, re.M)
        return f"response has {n} markdown bullet points"

    def sections(kw, r, p):
        spliter = str(kw.get("section_spliter", "Section"))
        n = len(re.split(r"\s?" + spliter + r"\s?\d+\s?", r)) - 1
        return f"response has {n} sections marked '{spliter} N'"

    def placeholders(kw, r, p):
        n = _count(r"\[.*?\]", r)
        return f"response has {n} placeholders in square brackets"

    return {
        "length_constraints:number_words": words,
        "length_constraints:number_sentences": sentences,
        "length_constraints:number_paragraphs": star_paragraphs,
        "length_constraints:nth_paragraph_first_word": nth_first,
        "punctuation:no_comma": lambda kw, r, p: f"response contains {r.count(',')} commas",
        "keywords:forbidden_words": forbidden,
        "keywords:existence": existence,
        "keywords:frequency": frequency,
        "keywords:letter_frequency": letter,
        "detectable_format:number_highlighted_sections":
            lambda kw, r, p: f"response has {_highlights(r)} highlighted sections like *this*",
        "detectable_format:number_bullet_lists": bullets,
        "detectable_format:title": lambda kw, r, p: "response has no title wrapped in double angular brackets",
        "detectable_format:json_format":
            lambda kw, r, p: f"response is not valid JSON; it starts with {r.strip()[:30]!r}",
        "detectable_format:multiple_sections": sections,
        "detectable_format:constrained_response":
            lambda kw, r, p: "response contains none of 'My answer is yes.', 'My answer is no.', 'My answer is maybe.'",
        "change_case:english_lowercase":
            lambda kw, r, p: (f"response has {sum(c.isupper() for c in r)} uppercase letters"
                              if not r.islower() else f"response language detected as {_language(r)}"),
        "change_case:english_capital":
            lambda kw, r, p: (f"response has {sum(c.islower() for c in r)} lowercase letters"
                              if not r.isupper() else f"response language detected as {_language(r)}"),
        "change_case:capital_word_frequency": caps,
        "detectable_content:number_placeholders": placeholders,
        "detectable_content:postscript":
            lambda kw, r, p: f"response has no line starting with {kw.get('postscript_marker')!r}",
        "startend:quotation":
            lambda kw, r, p: f"response starts with {r.strip()[:1]!r} and ends with {r.strip()[-1:]!r}, not both '\"'",
        "startend:end_checker": lambda kw, r, p: f"response ends with {_end(r)!r}",
        "combination:repeat_prompt":
            lambda kw, r, p: f"response starts with {r.strip()[:40]!r}, not with the request repeated word for word",
        "combination:two_responses":
            lambda kw, r, p: f"response has {sum(1 for x in r.split('******') if x.strip())} parts separated by ******",
        "language:response_language": lambda kw, r, p: f"response language detected as {_language(r)}",
        "count:word_count_range": words,
        "count:keywords_multiple": multiples,
        "count:unique_word_count": unique,
        "ratio:stop_words": stop_ratio,
        "sentence:increment": increment,
        "sentence:keyword": keyword_sentence,
        "count:conjunctions": conjunctions,
        "count:numbers": numbers,
        "count:pronouns": pronouns,
        "format:parentheses": nesting,
        "words:repeats": repeats,
        "words:no_consecutive": consecutive,
        "words:start_verb": lambda kw, r, p: f"response starts with {r.split()[0][:30]!r}" if r.split() else "",
    }


_FACTS = _facts()


def measure(instruction_id: str, kwargs: dict[str, Any], response: str, prompt: str = "") -> str:
    """What the response actually did for a violated instruction, where it can be measured ("" otherwise)."""
    fn = _FACTS.get(instruction_id)
    if fn is None:
        return ""
    try:
        return fn(kwargs, response, prompt)
    except Exception:  # noqa: BLE001 - a fact is a nicety; it must never break scoring
        return ""


def response_text(output: Any) -> tuple[str | None, dict[str, Any]]:
    """The response string in a program output (a string, or a dict with ``response``), and extra info."""
    if isinstance(output, str):
        return output, {}
    if isinstance(output, dict):
        text = output.get("response")
        info = {k: v for k, v in output.items() if k != "response"}
        return (text if isinstance(text, str) else None), info
    return None, {}


def result_to_metric(outcomes: list[InstructionOutcome], info: dict[str, Any] | None = None) -> MetricResult:
    """Score (fraction followed), success (all followed) and feedback that names each violated instruction."""
    info = info or {}
    total = len(outcomes)
    followed = sum(o.followed for o in outcomes)
    score = followed / total if total else 0.0
    lines = [f"Followed {followed} of {total} instructions (strict)."]
    for o in outcomes:
        if o.followed:
            continue
        reason = "; ".join(x for x in (o.fact, o.error) if x)
        if not reason and o.description:
            reason = f'requirement: "{_short_desc(o.description)}"'
        lines.append(f"violated: {o.label()}" + (f": {reason}" if reason else ""))
    ok = [o.instruction_id for o in outcomes if o.followed]
    if ok:
        lines.append(f"followed: {', '.join(ok)}")
    if info.get("hit_token_cap"):
        lines.append(f"note: the response stopped at the {info.get('max_tokens')}-token cap, so it may be cut off "
                     "(long-form instructions can fail for length alone)")
    return MetricResult(score=score, success=total > 0 and followed == total, feedback="\n".join(lines),
                        details={"instructions": [o.to_dict() for o in outcomes], "followed": followed,
                                 "total": total, **_token_info(info)})


def _token_info(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k in ("completion_tokens", "max_tokens", "hit_token_cap")}


def _short_desc(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def empty_output_metric(task: Task, output: Any, info: dict[str, Any]) -> MetricResult:
    ids = list(task.gold["instruction_id_list"]) if isinstance(task.gold, dict) else []
    kwargs = list(task.gold["kwargs"]) if isinstance(task.gold, dict) else []
    if output is None:
        what = "the agent produced no output"
    elif isinstance(output, (str, dict)):
        what = "the agent's response is empty"
    else:
        what = f"the agent's output is malformed ({type(output).__name__}, not a response string)"
    lines = [f"Followed 0 of {len(ids)} instructions (strict): {what}, so no instruction can be followed."]
    lines += [f"violated: {InstructionOutcome(i, dict(k), False).label()}" for i, k in zip(ids, kwargs)]
    return MetricResult(score=0.0, success=False, feedback="\n".join(lines),
                        details={"instructions": [{"id": i, "kwargs": k, "followed": False}
                                                  for i, k in zip(ids, kwargs)],
                                 "followed": 0, "total": len(ids), "empty": True, **_token_info(info)})


# --------------------------------------------------------------------------------------------------------------
# The benchmark base class
# --------------------------------------------------------------------------------------------------------------


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
    def default_data_dir(self) -> Path:
        raise NotImplementedError

    def load_registry(self) -> dict[str, type]:
        raise NotImplementedError

    # ---- data ----------------------------------------------------------------------------------------------------
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
    "Prompt", "SPLIT_FRACTIONS",
    "check_instructions", "count_sentences", "count_stopwords", "count_words", "empty_output_metric", "is_verb",
    "measure", "missing_package_error", "offline_checker_import", "pos_tag", "read_prompts", "response_text",
    "result_to_metric", "sent_tokenize", "split_keys", "split_sentences", "stopwords", "verb_forms",
    "word_tokenize",
]


class SentenceTokenizer:
    """Stands in for NLTK's punkt tokenizer inside the upstream checkers (offline regex splitter)."""

    @staticmethod
    def tokenize(text: str) -> list[str]:
        return split_sentences(text)


def installed_package_dir(benchmark: str, package: str, module: str) -> Path:
    """Folder of the installed ``module``; BenchmarkError naming the package when it is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        raise missing_package_error(benchmark, package, module, exc) from None
    if spec is None or not spec.submodule_search_locations:
        raise missing_package_error(benchmark, package, module, ModuleNotFoundError(f"No module named {module!r}"))
    return Path(list(spec.submodule_search_locations)[0])
