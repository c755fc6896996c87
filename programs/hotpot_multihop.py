"""Multi-hop QA for HotpotQA in the style of DSPy/GEPA's multi-hop program, sized for a small local model.

hop 1 query (LM, ``hotpot.hop1_query``) -> BM25 over the example's own 10 paragraphs (tool ``retrieve``, top ``k1``)
-> hop 2 query (LM, ``hotpot.hop2_query``, sees the hop-1 passages) -> BM25 again (tool ``retrieve``, ``k2`` new
paragraphs, hop-1 titles excluded) -> answer (LM, ``hotpot.answer``, a short span).

Passages are shown as their first 3 sentences (at most ``passage_chars`` = 300 characters; the hop-2 query prompt
shows the first 200). An empty or unusable query falls back to the
question itself, so a malformed reply never breaks retrieval. Output: ``{"answer", "queries", "titles"}``.
"""

from __future__ import annotations

from typing import Any, Callable

from nlgrad.programs import program_template
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Task
from nlgrad.text import BM25Index, clean_reply, first_sentences, tokenize

HOP1, HOP2, ANSWER = "hotpot.hop1_query", "hotpot.hop2_query", "hotpot.answer"


def parse_query(text: str, inputs: dict[str, Any]) -> str:  # noqa: ARG001 - parser signature
    """A cleaned one-line query ("" when the reply holds no usable word)."""
    query = clean_reply(text, max_chars=160)
    return query if tokenize(query) else ""


def parse_answer(text: str, inputs: dict[str, Any]) -> str:  # noqa: ARG001 - parser signature
    return clean_reply(text, max_chars=120)


def paragraph_texts(context: list[dict[str, Any]]) -> list[str]:
    """What BM25 indexes: title + the whole paragraph."""
    return [f"{p.get('title', '')} {''.join(p.get('sentences') or [])}" for p in context]


def retrieve(index: BM25Index, context: list[dict[str, Any]], query: str, k: int, exclude_titles: list[str],
             max_chars: int = 300) -> list[dict[str, Any]]:
    exclude = [i for i, p in enumerate(context) if p.get("title") in set(exclude_titles)]
    return [{"title": context[i].get("title", ""), "text": first_sentences(context[i].get("sentences") or [],
                                                                            3, max_chars), "score": score}
            for i, score in index.search(query, k, exclude=exclude)]


def context_search(context: list[dict[str, Any]], passage_chars: int = 300) -> Callable[..., list[dict[str, Any]]]:
    """The ``retrieve`` tool over one example's own paragraphs: ``search(query, k, exclude_titles)`` -> BM25's top
    ``k`` paragraphs (titles in ``exclude_titles`` left out), each shown as its first sentences."""
    index = BM25Index(paragraph_texts(context))

    def search(query: str, k: int, exclude_titles: list[str]) -> list[dict[str, Any]]:
        return retrieve(index, context, query, k, exclude_titles, passage_chars)

    return search


class HotpotMultiHopProgram:
    name = "hotpot_multihop"

    def __init__(self, benchmark=None, *, k1: int = 2, k2: int = 2, passage_chars: int = 300,
                 hop2_chars: int = 200):
        self.benchmark = benchmark
        self.k1, self.k2, self.passage_chars, self.hop2_chars = k1, k2, passage_chars, hop2_chars
        self.hop1 = Module(route=HOP1, template=program_template("hotpot_hop1_query.j2"), parser=parse_query,
                           max_tokens=24, template_name="hotpot_hop1_query.j2")
        self.hop2 = Module(route=HOP2, template=program_template("hotpot_hop2_query.j2"), parser=parse_query,
                           max_tokens=24, template_name="hotpot_hop2_query.j2")
        self.answer = Module(route=ANSWER, template=program_template("hotpot_answer.j2"), parser=parse_answer,
                             max_tokens=24, template_name="hotpot_answer.j2")

    @property
    def routes(self) -> list[str]:
        return [HOP1, HOP2, ANSWER]

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        question = task.inputs["question"]
        search = context_search(list(task.inputs.get("context") or []), self.passage_chars)
        q1 = ctx.call(self.hop1, question=question)
        query1 = q1.value or question
        hop1 = ctx.tool("retrieve", search, after=[q1], query=query1, k=self.k1, exclude_titles=[])
        seen = [{"title": p["title"], "text": first_sentences(p["text"], max_chars=self.hop2_chars)}
                for p in hop1.value]
        q2 = ctx.call(self.hop2, after=[hop1], question=question, passages=seen)
        query2 = q2.value or question
        titles1 = [p["title"] for p in hop1.value]
        hop2 = ctx.tool("retrieve", search, after=[q2], query=query2, k=self.k2, exclude_titles=titles1)
        passages = hop1.value + hop2.value
        answer = ctx.call(self.answer, after=[hop1, hop2], question=question, passages=passages)
        return {"answer": answer.value, "queries": [query1, query2], "titles": [p["title"] for p in passages]}
