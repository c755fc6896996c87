"""Claim verification for HoVer: query -> retrieve -> verify, sized for a small local model.

query (LM, ``hover.query``) -> BM25 top ``k`` over the benchmark's evidence corpus (tool ``retrieve``; the shared
HotpotQA paragraphs, see ``nlgrad.benchmarks.hover`` for why and how partial it is) -> verify (LM, ``hover.verify``,
one word). For ``hover/closedbook`` the program skips the query and retrieval and verifies the claim alone.

The verify parser maps any reply to SUPPORTED / NOT_SUPPORTED (default NOT_SUPPORTED, recorded as ``matched: None``)
and never raises. Output: ``{"label", "matched", "reply", "query", "titles"}``.
"""

from __future__ import annotations

from typing import Any

from nlgrad.programs import program_template
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.registry import load_benchmark
from nlgrad.text import clean_reply, parse_label, tokenize

QUERY, VERIFY = "hover.query", "hover.verify"


def parse_query(text: str, inputs: dict[str, Any]) -> str:  # noqa: ARG001 - parser signature
    query = clean_reply(text, max_chars=160)
    return query if tokenize(query) else ""


def parse_verdict(text: str, inputs: dict[str, Any]) -> dict[str, Any]:  # noqa: ARG001 - parser signature
    return {**parse_label(text), "reply": (text or "").strip()[:200]}


class HoverVerifyProgram:
    name = "hover_verify"

    def __init__(self, benchmark=None, *, k: int = 3):
        self.benchmark = benchmark if benchmark is not None else load_benchmark("hover")
        self.k = k
        self.query = Module(route=QUERY, template=program_template("hover_query.j2"), parser=parse_query, max_tokens=24,
                            template_name="hover_query.j2")
        self.verify = Module(route=VERIFY, template=program_template("hover_verify.j2"), parser=parse_verdict,
                             max_tokens=8, template_name="hover_verify.j2")

    @property
    def routes(self) -> list[str]:
        return [VERIFY] if self._corpus() is None else [QUERY, VERIFY]

    def _corpus(self):
        corpus = getattr(self.benchmark, "corpus", None)
        return corpus() if callable(corpus) else None

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        claim = task.inputs["claim"]
        corpus = self._corpus()
        if corpus is None:
            verdict = ctx.call(self.verify, claim=claim, passages=[])
            return {**verdict.value, "query": None, "titles": []}
        q = ctx.call(self.query, claim=claim)
        query = q.value or claim
        hits = ctx.tool("retrieve", corpus.search, after=[q], query=query, k=self.k)
        verdict = ctx.call(self.verify, claim=claim, passages=hits)
        return {**verdict.value, "query": query, "titles": [p["title"] for p in hits.value]}
