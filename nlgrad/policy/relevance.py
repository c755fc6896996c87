"""Which entries of a route a module call is shown: conditional lessons.

An entry with ``match`` patterns is *conditional*: it is shown to a call only when the call's input text matches one
of them (case-insensitive regular expressions; a plain word matches as a word). An entry without patterns is always
shown. Selection is deterministic and cheap; :class:`EmbeddingSelector` adds an option for entries that carry only a
``when`` condition (shown when the condition is close enough to the input). ``top_k`` caps how many conditional
entries one call sees (highest utility first, the render order); unconditional entries are never dropped by it.
:class:`RetrievalSelector` is JERP's rule retrieval: every entry competes, the top ``k`` by embedding similarity to
the input plus a utility bonus are shown (an entry with ``match`` patterns only when they hold). A policy records
its selection (``PolicyMemory.selection``); :func:`nlgrad.policy.selectors.selector_for` builds the selector it
names.

The same selection serves the executor (each module call, recorded on its trace node), ``nlgrad policy render
--for-input TEXT`` and :meth:`PolicyMemory.render(route, for_input=...) <nlgrad.policy.memory.PolicyMemory.render>`,
so a deployed prompt applies a policy per request exactly as nlgrad's own runs did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nlgrad.policy.patterns import compile_pattern
from nlgrad.text.embeddings import cosine

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from nlgrad.policy.schema import PolicyEntry


def matches(entry: PolicyEntry, text: str) -> bool:
    return any(compile_pattern(p).search(text) for p in entry.match)


class EntrySelector(Protocol):
    """Contract: ``select(entries, text)`` returns the entries (a sub-list, in the given order) that a call whose
    input is ``text`` is shown. ``entries`` are a route's active entries in render order."""

    def select(self, entries: Sequence[PolicyEntry], text: str) -> list[PolicyEntry]: ...


@dataclass(frozen=True)
class PatternSelector:
    """Entries with ``match`` patterns are shown when one matches; entries without are always shown."""

    top_k: int | None = None

    def select(self, entries: Sequence[PolicyEntry], text: str) -> list[PolicyEntry]:
        chosen, conditional = [], 0
        for entry in entries:
            if not entry.match:
                chosen.append(entry)
            elif matches(entry, text) and (self.top_k is None or conditional < self.top_k):
                chosen.append(entry)
                conditional += 1
        return chosen


@dataclass
class EmbeddingSelector:
    """Like :class:`PatternSelector`, and an entry with a ``when`` but no patterns is shown when the cosine
    similarity of its condition and the input is at least ``threshold``. ``embed`` maps texts to vectors (e.g. the
    MiniLM model of the ``embed`` extra: :func:`nlgrad.text.embeddings.load_embedder`)."""

    embed: Callable[[list[str]], Sequence[Sequence[float]]]
    threshold: float = 0.35
    top_k: int | None = None
    _cache: dict[str, Sequence[float]] = field(default_factory=dict, repr=False)

    def _vector(self, text: str) -> Sequence[float]:
        if text not in self._cache:
            self._cache[text] = self.embed([text])[0]
        return self._cache[text]

    def select(self, entries: Sequence[PolicyEntry], text: str) -> list[PolicyEntry]:
        chosen, conditional, query = [], 0, None
        for entry in entries:
            if entry.match:
                relevant = matches(entry, text)
            elif entry.when:
                query = query if query is not None else self._vector(text)
                relevant = cosine(self._vector(entry.when), query) >= self.threshold
            else:
                chosen.append(entry)
                continue
            if relevant and (self.top_k is None or conditional < self.top_k):
                chosen.append(entry)
                conditional += 1
        return chosen


def retrieval_text(entry: PolicyEntry) -> str:
    """What retrieval compares with the input: an entry's condition and its text."""
    return f"{entry.when or ''} {entry.text}".strip()


@dataclass
class RetrievalSelector:
    """The top ``k`` entries for the input, ranked by cosine(input, condition + text) + ``utility_weight`` x
    u / (1 + |u|) (u = helpful - harmful), ties by id (:meth:`ranked`: best first; :meth:`select`: in render order).
    Entries whose ``match`` patterns do not hold are not candidates."""

    embed: Callable[[list[str]], Sequence[Sequence[float]]]
    k: int = 4
    utility_weight: float = 0.1

    def ranked(self, entries: Sequence[PolicyEntry], text: str) -> list[tuple[PolicyEntry, float]]:
        candidates = [e for e in entries if not e.match or matches(e, text)]
        if not candidates or self.k <= 0:
            return []
        vectors = self.embed([text] + [retrieval_text(e) for e in candidates])
        scored = [(e, cosine(vectors[0], v) + self.utility_weight * e.utility / (1 + abs(e.utility)))
                  for e, v in zip(candidates, vectors[1:])]
        scored.sort(key=lambda pair: (-pair[1], pair[0].id or ""))
        return scored[: self.k]

    def select(self, entries: Sequence[PolicyEntry], text: str) -> list[PolicyEntry]:
        chosen = {id(e) for e, _ in self.ranked(entries, text)}
        return [e for e in entries if id(e) in chosen]  # in the given (render) order, as every selector


def unmatched_conditions(entries: Iterable[PolicyEntry], texts: Iterable[str]) -> list[PolicyEntry]:
    """Conditional entries whose patterns match none of ``texts`` (e.g. the train split's inputs): a condition that
    never fires teaches nothing, and is flagged where policies are written or shown."""
    texts = list(texts)
    return [e for e in entries if e.match and not any(matches(e, t) for t in texts)]


def conditions_never_shown(entries_by_route: dict[str, Sequence[PolicyEntry]],
                           shown: Iterable[tuple[str, Sequence[str]]]) -> list[str]:
    """Ids of conditional entries that no call of their route was shown, given ``(route, shown ids)`` per module call
    of a run: a condition that fired nowhere on the split taught nothing there. Routes no call reached are left out
    (nothing was decided for them)."""
    called: set[str] = set()
    seen: set[str] = set()
    for route, ids in shown:
        called.add(route)
        seen.update(ids or [])
    return [e.id or "" for route, entries in entries_by_route.items() if route in called
            for e in entries if e.match and e.id not in seen]
