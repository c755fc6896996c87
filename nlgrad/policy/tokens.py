"""A deterministic word/punctuation tokenizer, token-level edit distance and word-level diff ops.

No model is downloaded: a "token" here is a run of word characters or a single punctuation character. Bounds
(tokens per route, edit cost) are counted with this tokenizer so they are identical on every machine.
"""

from __future__ import annotations

import difflib
import re
from typing import Sequence

_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WORD_RE = re.compile(r"\S+")


def policy_tokens(text: str | None) -> list[str]:
    """The tokens policy bounds count: ``text`` split into word and punctuation tokens, case kept
    (``"Don't go."`` -> ``["Don", "'", "t", "go", "."]``). Retrieval's tokenizer is :func:`nlgrad.text.tokenize`."""
    if not text:
        return []
    return _TOKEN_RE.findall(text)


def count_tokens(text: str | None) -> int:
    return len(policy_tokens(text))


def normalized_words(text: str | None) -> list[str]:
    """Lower-cased word tokens without punctuation: the basis of lexical near-duplicate detection."""
    return [tok.lower() for tok in policy_tokens(text) if tok[0].isalnum() or tok[0] == "_"]


def edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance between two token sequences (insert, delete and substitute each cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    previous = list(range(len(b) + 1))
    for i, tok_a in enumerate(a, start=1):
        current = [i]
        for j, tok_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (tok_a != tok_b)))
        previous = current
    return previous[-1]


def token_edit_distance(old: str | None, new: str | None) -> int:
    """Token-level edit distance between two texts (the "edit cost" of turning ``old`` into ``new``)."""
    return edit_distance(policy_tokens(old), policy_tokens(new))


def word_ops(old: str | None, new: str | None) -> list[dict[str, str]]:
    """Word-level diff of two texts as ``[{"op": "equal"|"delete"|"insert", "text": ...}, ...]``.

    Words are whitespace-separated; a replacement is reported as a ``delete`` followed by an ``insert``. Joining the
    ``equal`` and ``delete`` texts with spaces gives the old words, ``equal`` and ``insert`` the new ones.
    """
    old_words = _WORD_RE.findall(old or "")
    new_words = _WORD_RE.findall(new or "")
    ops: list[dict[str, str]] = []
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            ops.append({"op": "equal", "text": " ".join(old_words[i1:i2])})
            continue
        if tag in ("delete", "replace"):
            ops.append({"op": "delete", "text": " ".join(old_words[i1:i2])})
        if tag in ("insert", "replace"):
            ops.append({"op": "insert", "text": " ".join(new_words[j1:j2])})
    return ops
