"""Reading a saved optimize run back: its program and the files of its iterations (used by the replay scripts, which
re-run a deterministic step of a method on what a run saved, with few or no LM calls)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

from nlgrad.credit.backward import NodeFeedbackRecord
from nlgrad.runtime.module import route_instructions
from nlgrad.methods.nlpg.proposals import Candidate
from nlgrad.runtime.registry import load_benchmark, load_program
from nlgrad.runtime.trace import Trace


@dataclass
class SavedRun:
    path: Path
    config: dict[str, Any]
    benchmark: Any
    program: Any

    @cached_property
    def instructions(self) -> dict[str, str]:
        return {route: route_instructions(self.program, route) for route in self.program.routes}

    def iterations(self) -> list[Path]:
        return sorted(p for p in self.path.glob("iter-*") if p.is_dir())

    def proposals(self) -> Iterator[tuple[Path, list[Candidate], list[NodeFeedbackRecord]]]:
        """(iteration folder, NLPG candidates, feedback records) for every iteration that saved its proposals."""
        for folder in self.iterations():
            loaded = load_proposals(folder)
            if loaded is not None:
                yield folder, *loaded

    def workspace(self) -> SimpleNamespace:
        """What :func:`~nlgrad.methods.lesson_checks.workspace_instance_tokens` reads of a workspace."""
        return SimpleNamespace(train_tasks=self.benchmark.tasks("train"), program=self.program)


def load_saved_run(path: str | Path) -> SavedRun:
    """The run folder (an ``optimize --out DIR``'s ``run/``) with its benchmark and program from ``config.json``."""
    path = Path(path)
    config_path = path / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{config_path}: not an optimize run folder (no config.json); pass DIR/run")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    benchmark = load_benchmark(config["benchmark"])
    program = load_program(config.get("program") or benchmark.default_program, benchmark)
    return SavedRun(path, config, benchmark, program)


def load_traces(folder: Path) -> dict[str, Trace]:
    return {t.task_id: t for t in map(Trace.load, sorted((folder / "traces").glob("*.json")))}


def load_proposals(folder: Path) -> tuple[list[Candidate], list[NodeFeedbackRecord]] | None:
    """An NLPG iteration's proposed candidates and the backward pass's feedback records (None when not saved)."""
    if not (folder / "proposals.json").is_file() or not (folder / "feedback.json").is_file():
        return None
    cands = [Candidate(c["route"], c["text"], c.get("when"), list(c.get("trace_ids") or []), c.get("replaces"),
                       list(c.get("notes") or []))
             for c in json.loads((folder / "proposals.json").read_text(encoding="utf-8"))["candidates"]]
    records = [NodeFeedbackRecord(**r) for r in json.loads((folder / "feedback.json").read_text(encoding="utf-8"))]
    return cands, records


def ops_summary(ops: list) -> str:
    """``[support] text; ...`` for policy operations (``-`` when there are none), as the replay scripts print them."""
    return "; ".join(f"[{len(op.trace_ids)}] {op.text[:100]}" for op in ops) or "-"
