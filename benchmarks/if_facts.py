"""Feedback facts: what a response actually did for an instruction it violated ("response has 212 words").

:func:`measure` maps an instruction id to a small function of (kwargs, response, prompt); a fact is a nicety for the
critic and never affects the score.
"""

from __future__ import annotations

import re
import string
import sys
from collections import Counter
from typing import Any, Callable

from nlgrad.benchmarks.if_offline_nltk import (count_sentences, count_stopwords, count_words, split_sentences,
                                               word_tokenize)

_PRONOUNS = frozenset(
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers "
    "herself it its itself they them their theirs themselves".split()
)


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
        import langdetect  # seeded and loaded by the registry's ready_langdetect before any check runs

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
