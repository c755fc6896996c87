"""A tiny deterministic BM25 index (Okapi BM25 from the ``rank-bm25`` package) for the QA programs and benchmarks.

Tokens are lowercased, accent-stripped word characters minus a short English stopword list (no stemming). Ties are
broken by document order, so the same corpus and query always give the same ranking.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Sequence

from nlgrad.errors import BenchmarkError

_WORD = re.compile(r"\w+")
STOPWORDS = frozenset("""
a an the and or but if of at by for with about against between into through during before after above below to from
up down in out on off over under again further then once here there when where why how all any both each few more
most other some such no nor not only own same so than too very s t can will just don should now is are was were be
been being have has had having do does did doing i me my myself we our ours you your he him his she her it its they
them their what which who whom this that these those am as until while would could also
""".split())


def tokenize(text: str) -> list[str]:
    """Lowercase, strip accents ("Lótus" -> "lotus"), keep word tokens, drop stopwords."""
    folded = unicodedata.normalize("NFKD", str(text or "").casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return [t for t in _WORD.findall(folded) if t not in STOPWORDS]


class BM25Index:
    """BM25 over a fixed list of documents; :meth:`search` returns ``(index, score)`` pairs, best first."""

    def __init__(self, documents: Sequence[str]):
        try:
            from rank_bm25 import BM25Okapi
        except ImportError:
            raise BenchmarkError("BM25 retrieval needs the package rank-bm25: pip install 'rank-bm25>=0.2.2'") from None
        self.size = len(documents)
        tokenized = [tokenize(d) for d in documents]
        # rank-bm25 divides by the corpus size and the average length: guard the degenerate cases.
        self._bm25 = BM25Okapi(tokenized) if self.size and any(tokenized) else None

    def search(self, query: str, k: int, exclude: Iterable[int] = ()) -> list[tuple[int, float]]:
        """Top ``k`` documents for ``query`` (ties and all-zero scores fall back to document order)."""
        if self.size == 0 or k <= 0:
            return []
        skip = set(exclude)
        terms = tokenize(query)
        if self._bm25 is None or not terms:
            scores = [0.0] * self.size
        else:
            scores = [float(s) for s in self._bm25.get_scores(terms)]
        order = sorted((i for i in range(self.size) if i not in skip), key=lambda i: (-scores[i], i))
        return [(i, round(scores[i], 4)) for i in order[:k]]


def first_sentences(sentences: Sequence[str] | str, n: int = 3, max_chars: int = 400) -> str:
    """The first ``n`` sentences joined (HotpotQA keeps their leading spaces), or a plain string as is, cut at a word
    under ``max_chars`` (with " ..." appended when cut)."""
    text = sentences if isinstance(sentences, str) else "".join(sentences[:n])
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars].rsplit(" ", 1)[0]
    return cut + " ..."
