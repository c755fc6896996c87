"""A sequential two-agent team for HotpotQA: researcher -> answerer (a LangMARL team program).

retrieve (BM25 over the example's own 10 paragraphs, the question as query, top ``k1``) -> **researcher** (LM,
``team_hotpot.researcher``: "Facts: ..." and "Next search: ..." for its teammate) -> retrieve (the researcher's
query, ``k2`` new paragraphs) -> **answerer** (LM, ``team_hotpot.answerer``: a short span).

The researcher's message reaches the answerer as an input, so the trace has a data (message) edge from the
researcher's node to the answerer's. Each agent is an LM module with its own role prompt and its own route, i.e.
its own policy (``agents`` maps agent -> routes, which LangMARL reads). Retrieval reuses the shared BM25 helpers of
the hotpot_multihop program. Output: ``{"answer", "notes", "queries", "titles"}`` (what the hotpotqa metric reads).
"""

from __future__ import annotations

import re
from typing import Any

from nlgrad.programs import program_template
from nlgrad.programs.hotpot_multihop import context_search, parse_answer
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Task
from nlgrad.text import clean_reply, tokenize

RESEARCHER, ANSWERER = "team_hotpot.researcher", "team_hotpot.answerer"
_FACTS = re.compile(r"^\s*[*#>-]*\s*facts?\s*[:\-]\s*(.*)$", re.I)
_SEARCH = re.compile(r"^\s*[*#>-]*\s*(?:next\s+)?(?:search|query)\s*[:\-]\s*(.*)$", re.I)


def parse_research(text: str, inputs: dict[str, Any]) -> dict[str, str]:  # noqa: ARG001 - parser signature
    """``{"notes", "query"}`` from "Facts: ... / Next search: ..."; unlabeled text counts as notes, and the notes
    double as the query when no usable query line is given. Never raises."""
    notes, query, loose = "", "", []
    for line in str(text or "").splitlines():
        if not line.strip():
            continue
        facts, search = _FACTS.match(line), _SEARCH.match(line)
        if search and not query:
            query = clean_reply(search.group(1), max_chars=160)
        elif facts and not notes:
            notes = " ".join(facts.group(1).split())
        else:
            loose.append(" ".join(line.split()))
    notes = (notes or " ".join(loose))[:400]
    if not tokenize(query):
        query = clean_reply(notes, max_chars=160)
    return {"notes": notes, "query": query if tokenize(query) else ""}


class TeamHotpotProgram:
    name = "team_hotpot"
    agents: dict[str, list[str]] = {"researcher": [RESEARCHER], "answerer": [ANSWERER]}

    def __init__(self, benchmark=None, *, k1: int = 2, k2: int = 2, passage_chars: int = 300):
        self.benchmark = benchmark
        self.k1, self.k2, self.passage_chars = k1, k2, passage_chars
        self.researcher = Module(route=RESEARCHER, template=program_template("team_hotpot_researcher.j2"),
                                 parser=parse_research, max_tokens=64, stop=["\n\n"],
                                 template_name="team_hotpot_researcher.j2")
        self.answerer = Module(route=ANSWERER, template=program_template("team_hotpot_answerer.j2"),
                               parser=parse_answer, max_tokens=24, stop=["\n"], template_name="team_hotpot_answerer.j2")

    @property
    def routes(self) -> list[str]:
        return [RESEARCHER, ANSWERER]

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        question = task.inputs["question"]
        search = context_search(list(task.inputs.get("context") or []), self.passage_chars)
        hop1 = ctx.tool("retrieve", search, query=question, k=self.k1, exclude_titles=[])
        research = ctx.call(self.researcher, question=question, passages=hop1)
        query2 = research.value["query"] or question
        titles1 = [p["title"] for p in hop1.value]
        hop2 = ctx.tool("retrieve", search, after=[research], query=query2, k=self.k2, exclude_titles=titles1)
        passages = hop1.value + hop2.value
        # the researcher's Output is an input of the answerer: a message edge researcher -> answerer
        answer = ctx.call(self.answerer, after=[hop2], question=question, research=research, passages=passages)
        return {"answer": answer.value, "notes": research.value["notes"], "queries": [question, query2],
                "titles": [p["title"] for p in passages]}
