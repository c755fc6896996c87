"""The ``examples`` selection: each call is shown the ``k`` worked examples whose input is nearest its own.

A policy whose :class:`~nlgrad.policy.schema.Selection` has ``kind: examples`` may hold many ``example`` entries
for a route (bounded by :attr:`PolicyBounds.max_examples_per_route <nlgrad.policy.bounds.PolicyBounds>` when
learned); a module call sees only the ``k`` whose *input* (the ``Input:`` part of the entry,
:func:`~nlgrad.policy.examples.split_example`) is most similar to the call's input text, by embedding cosine, ties
by id, and shows them nearest last. Other entries are chosen as :class:`~nlgrad.policy.relevance.PatternSelector`
chooses them (conditional by their ``match`` patterns, unconditional always). This is the per-input demo selection of DSPy's ``KNNFewShot`` and
of JERP's rule retrieval, applied to a bounded, reviewable file.

Vectors of a route's example inputs are computed once per set of examples and kept as a matrix (a few sets per
process), so a call costs one embedding and one matrix-vector product however many examples the route holds.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from nlgrad.policy.examples import split_example
from nlgrad.policy.relevance import PatternSelector, matches
from nlgrad.policy.schema import EntryKind, PolicyEntry

_MATRICES: OrderedDict[str, np.ndarray] = OrderedDict()
_LOCK = threading.Lock()
_KEEP = 8


def example_input(entry: PolicyEntry) -> str:
    """What an example is compared on: its input (the whole text when it is not in ``Input:/Output:`` form)."""
    pair = split_example(entry.text)
    return pair[0] if pair else entry.text


def _matrix(embed: Callable[[list[str]], Sequence[Sequence[float]]], name: str, texts: list[str]) -> np.ndarray:
    key = hashlib.sha256("\x1f".join([name, *texts]).encode()).hexdigest()
    with _LOCK:
        if key in _MATRICES:
            _MATRICES.move_to_end(key)
            return _MATRICES[key]
    matrix = np.asarray(embed(texts), dtype=np.float32).reshape(len(texts), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0, 1.0, norms)
    with _LOCK:
        _MATRICES[key] = matrix
        while len(_MATRICES) > _KEEP:
            _MATRICES.popitem(last=False)
    return matrix


@dataclass
class NearestExamplesSelector:
    """Contract (:class:`~nlgrad.policy.relevance.EntrySelector`): ``select(entries, text)`` returns every
    non-example entry that :class:`PatternSelector` would show, in the given order, then the ``k`` example entries
    nearest ``text`` (examples with ``match`` patterns only where they hold), the nearest *last*: shown as prior
    turns, the nearest example is the one right before the input. The order matters: on banking77 x 1.5B with eight
    examples in id order, 48 of the 70 replies whose label was among them took that of one of the last three."""

    embed: Callable[[list[str]], Sequence[Sequence[float]]]
    k: int = 8
    name: str = "embedder"

    def nearest(self, examples: Sequence[PolicyEntry], text: str) -> list[tuple[PolicyEntry, float]]:
        """The ``k`` nearest examples, best first, with their cosine similarity."""
        if not examples or self.k <= 0:
            return []
        matrix = _matrix(self.embed, self.name, [example_input(e) for e in examples])
        query = np.asarray(self.embed([text])[0], dtype=np.float32)
        query = query / (np.linalg.norm(query) or 1.0)
        sims = matrix @ query
        order = sorted(range(len(examples)), key=lambda i: (-float(sims[i]), examples[i].id or ""))
        return [(examples[i], float(sims[i])) for i in order[: self.k]]

    def select(self, entries: Sequence[PolicyEntry], text: str) -> list[PolicyEntry]:
        examples = [e for e in entries if e.kind == EntryKind.example and (not e.match or matches(e, text))]
        others = PatternSelector().select([e for e in entries if e.kind != EntryKind.example], text)
        return others + [e for e, _ in reversed(self.nearest(examples, text))]
