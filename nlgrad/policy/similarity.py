"""Near-duplicate detection behind a small protocol, so an embedding backend can plug in later.

The default :class:`LexicalSimilarity` needs no model: it compares lower-cased word tokens (punctuation dropped)
with the larger of token-set Jaccard and difflib's sequence ratio. An embedding backend only has to provide
``similarity(a, b) -> float`` in ``[0, 1]``; pass it as ``apply_update(..., similarity=...)``.
"""

from __future__ import annotations

import difflib
from typing import Protocol, runtime_checkable

from nlgrad.policy.tokens import normalized_words


@runtime_checkable
class Similarity(Protocol):
    def similarity(self, a: str, b: str) -> float:
        """Symmetric score in [0, 1]; 1 means the two texts say the same thing."""
        ...


class LexicalSimilarity:
    """max(token-set Jaccard, difflib ratio over normalized word sequences). Deterministic and model-free."""

    name = "lexical"

    def similarity(self, a: str, b: str) -> float:
        wa, wb = normalized_words(a), normalized_words(b)
        if not wa and not wb:
            return 1.0
        if not wa or not wb:
            return 0.0
        sa, sb = set(wa), set(wb)
        jaccard = len(sa & sb) / len(sa | sb)
        ratio = difflib.SequenceMatcher(None, wa, wb, autojunk=False).ratio()
        return max(jaccard, ratio)


DEFAULT_SIMILARITY = LexicalSimilarity()


class EmbeddingSimilarity:
    """Cosine similarity of embeddings from any ``embed(texts) -> list[vector]`` callable (e.g. a MiniLM model).

    No model is bundled: pass the embedding function of a backend you installed. Vectors are cached per text.
    Cosine is clipped to [0, 1].
    """

    name = "embedding"

    def __init__(self, embed):
        self._embed = embed
        self._cache: dict[str, list[float]] = {}

    def _vector(self, text: str) -> list[float]:
        if text not in self._cache:
            self._cache[text] = [float(x) for x in self._embed([text])[0]]
        return self._cache[text]

    def similarity(self, a: str, b: str) -> float:
        va, vb = self._vector(a), self._vector(b)
        dot = sum(x * y for x, y in zip(va, vb))
        na = sum(x * x for x in va) ** 0.5
        nb = sum(y * y for y in vb) ** 0.5
        if na == 0 or nb == 0:
            return 0.0
        return max(0.0, min(1.0, dot / (na * nb)))
