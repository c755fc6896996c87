"""One task's result (``TaskResult``, re-exported by the executor) and the check of a saved ``results.jsonl``
record against its fields before it is read back.

A line written by another nlgrad version (or edited by hand) with a field this version does not know, or without
one it needs, would otherwise surface as a ``TypeError`` traceback from ``TaskResult(**record)`` on every resume.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nlgrad.errors import ConfigError


@dataclass
class TaskResult:
    task_id: str
    split: str
    seed: int | None
    score: float
    success: bool
    feedback: str = ""
    error: str | None = None
    steps: int = 0
    tokens: int = 0
    latency_s: float = 0.0
    output: Any = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fields() -> tuple[set[str], set[str]]:
    every = {f.name for f in dataclasses.fields(TaskResult)}
    required = {f.name for f in dataclasses.fields(TaskResult)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    return every, required


def check_result_fields(record: dict[str, Any], path: Path, number: int) -> None:
    """Raise ConfigError naming the file, the record and the fields if ``record`` is not a TaskResult's fields."""
    every, required = _fields()
    unknown, missing = sorted(set(record) - every), sorted(required - set(record))
    if unknown or missing:
        problems = ([f"unknown field(s) {', '.join(unknown)}"] if unknown else []) + (
            [f"missing field(s) {', '.join(missing)}"] if missing else [])
        raise ConfigError(f"a saved task result has {' and '.join(problems)} (written by another nlgrad version or "
                          "edited); fix or remove that line, or start a new run directory", source=str(path),
                          field=f"record {number} (task {record.get('task_id')!r})",
                          value=", ".join(unknown + missing))
