"""The selector a policy's recorded ``selection`` names (:func:`selector_for`).

The selectors themselves live with what they select: conditions and retrieval in :mod:`nlgrad.policy.relevance`,
nearest worked examples in :mod:`nlgrad.policy.example_selection`. This module sits above both, so neither imports
the other to build a selector.
"""

from __future__ import annotations

from nlgrad.policy.example_selection import NearestExamplesSelector
from nlgrad.policy.relevance import EntrySelector, PatternSelector, RetrievalSelector
from nlgrad.policy.schema import Selection
from nlgrad.text.embeddings import load_embedder


def selector_for(selection: Selection | None) -> EntrySelector:
    """The selector a policy's recorded ``selection`` names (None: patterns, no cap)."""
    if selection is None:
        return PatternSelector()
    if selection.kind in ("retrieval", "examples"):
        embedder = load_embedder(selection.embedder)
        if selection.kind == "examples":
            return NearestExamplesSelector(embedder.embed, k=selection.k or 8, name=embedder.name)
        return RetrievalSelector(embedder.embed, k=selection.k or 4, utility_weight=selection.utility_weight)
    return PatternSelector(top_k=selection.k)
