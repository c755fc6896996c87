"""Text helpers that programs, benchmarks and methods share, so that none of them imports another's internals.

- :mod:`nlgrad.text.clean`: :func:`clip` (the one way to shorten text for a prompt or a message), :func:`as_text`
  and :func:`clean_reply` (the first usable line of an LM reply);
- :mod:`nlgrad.text.bm25`: :func:`tokenize`, :class:`BM25Index` and :func:`first_sentences` (deterministic lexical
  retrieval);
- :mod:`nlgrad.text.tool_calls`: :func:`parse_agent_reply` and :func:`format_action` (a tool call or a message read
  from an agent's reply, and its canonical text);
- :mod:`nlgrad.text.verdict`: :func:`parse_label` (a claim verdict, SUPPORTED / NOT_SUPPORTED, read from free text);
- :mod:`nlgrad.text.embeddings`: :func:`load_embedder` (MiniLM when the ``embed`` extra is installed, else a lexical
  embedder) and :func:`cosine`, imported on use (not from this package's top level).

Nothing here imports a benchmark, a program or an LM.
"""

from nlgrad.text.bm25 import BM25Index, first_sentences, tokenize
from nlgrad.text.clean import as_text, clean_reply, clip
from nlgrad.text.tool_calls import format_action, parse_agent_reply
from nlgrad.text.verdict import LABELS, parse_label

__all__ = ["BM25Index", "LABELS", "as_text", "clean_reply", "clip", "first_sentences", "format_action",
           "parse_agent_reply", "parse_label", "tokenize"]
