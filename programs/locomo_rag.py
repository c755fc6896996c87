"""Retrieval-augmented answering for LoCoMo, sized for a small local model.

retrieve (tool ``retrieve``: BM25 over the conversation's turns, each indexed with its session date, speaker, text
and photo caption; top ``k`` by the question, shown in chronological order) -> answer (LM, ``locomo.answer``, a short
answer or "Not mentioned in the conversation"). Output: ``{"answer", "dia_ids"}``.
"""

from __future__ import annotations

import threading
from typing import Any

from nlgrad.programs import program_template
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.registry import load_benchmark
from nlgrad.text import BM25Index, clean_reply

ANSWER = "locomo.answer"


def parse_answer(text: str, inputs: dict[str, Any]) -> str:  # noqa: ARG001 - parser signature
    return clean_reply(text, max_chars=160)


def turn_document(turn: dict[str, Any]) -> str:
    caption = f" {turn['caption']}" if turn.get("caption") else ""
    return f"{turn.get('date', '')} {turn.get('speaker', '')}: {turn.get('text', '')}{caption}"


def shown_turn(turn: dict[str, Any], max_chars: int) -> dict[str, Any]:
    text = " ".join(str(turn.get("text", "")).split())
    if turn.get("caption"):
        text += f" [shares a photo: {turn['caption']}]"
    if len(text) > max_chars:
        text = text[:max_chars].rsplit(" ", 1)[0] + " ..."
    return {"dia_id": turn.get("dia_id", ""), "date": turn.get("date", ""), "speaker": turn.get("speaker", ""),
            "text": text}


class LocomoRAGProgram:
    name = "locomo_rag"

    def __init__(self, benchmark=None, *, k: int = 5, turn_chars: int = 220):
        self.benchmark = benchmark if benchmark is not None else load_benchmark("locomo")
        self.k, self.turn_chars = k, turn_chars
        self.answer = Module(route=ANSWER, template=program_template("locomo_answer.j2"), parser=parse_answer,
                             max_tokens=24, template_name="locomo_answer.j2")
        self._indexes: dict[str, tuple[list[dict[str, Any]], BM25Index]] = {}
        self._lock = threading.Lock()

    @property
    def routes(self) -> list[str]:
        return [ANSWER]

    def _index(self, sample_id: str) -> tuple[list[dict[str, Any]], BM25Index]:
        with self._lock:
            if sample_id not in self._indexes:
                turns = self.benchmark.turns(sample_id)
                self._indexes[sample_id] = (turns, BM25Index([turn_document(t) for t in turns]))
            return self._indexes[sample_id]

    def search(self, sample_id: str, query: str, k: int) -> list[dict[str, Any]]:
        """Top ``k`` turns for ``query``, returned in conversation order."""
        turns, index = self._index(sample_id)
        best = sorted(i for i, _ in index.search(query, k))
        return [shown_turn(turns[i], self.turn_chars) for i in best]

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        question = task.inputs["question"]
        hits = ctx.tool("retrieve", self.search, sample_id=task.inputs["sample_id"], query=question, k=self.k)
        answer = ctx.call(self.answer, question=question, turns=hits,
                          speakers=[s for s in task.inputs.get("speakers", []) if s] or ["two people"])
        return {"answer": answer.value, "dia_ids": [t["dia_id"] for t in hits.value]}
