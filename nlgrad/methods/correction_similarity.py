"""How alike two corrections are, per embedding backend: near-duplicate and contradiction thresholds for NLPG's
aggregation and the replay scripts. The embedders themselves are neutral text helpers in
:mod:`nlgrad.text.embeddings`.
"""

from __future__ import annotations

from nlgrad.policy import EmbeddingSimilarity, LexicalSimilarity
from nlgrad.text.embeddings import load_embedder

# Near-duplicate thresholds per backend, for counting how often one correction recurs: with MiniLM, paraphrases of
# one rule score above 0.65 and different rules on the same topic below it; lexical is the word-overlap similarity.
DEDUPE_THRESHOLDS = {"all-MiniLM-L6-v2": 0.65, "lexical": 0.6}

# Two corrections contradict when exactly one is negated and, negation words removed, they say the same thing. MiniLM
# needs 0.8 because two corrections on one topic, only one of which happens to contain "no"/"not", can score up to
# about 0.75; word overlap separates such pairs at 0.6.
CONTRADICTION_THRESHOLDS = {"all-MiniLM-L6-v2": 0.8, "lexical": 0.6}


def contradiction_threshold(backend: str) -> float:
    """The similarity above which a negated and an un-negated correction count as contradicting (per backend)."""
    return CONTRADICTION_THRESHOLDS.get(backend, CONTRADICTION_THRESHOLDS["all-MiniLM-L6-v2"])


def correction_similarity(kind: str = "auto", threshold: float | None = None):
    """``(similarity, threshold, backend name)`` for merging near-duplicate corrections: ``kind`` is ``auto`` /
    ``minilm`` / ``lexical`` as for :func:`load_embedder`; lexical uses the policy's word-overlap similarity."""
    embedder = load_embedder(kind)
    default = DEDUPE_THRESHOLDS.get(embedder.name, DEDUPE_THRESHOLDS["all-MiniLM-L6-v2"])
    sim = LexicalSimilarity() if embedder.name == "lexical" else EmbeddingSimilarity(embedder.embed)
    return sim, default if threshold is None else threshold, embedder.name
