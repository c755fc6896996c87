"""Checking a saved ``results.jsonl`` record against the fields of ``TaskResult`` before it is read back.

A line written by another nlgrad version (or edited by hand) with a field this version does not know, or without
one it needs, would otherwise surface as a ``TypeError`` traceback from ``TaskResult(**record)`` on every resume.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from nlgrad.errors import ConfigError


def _fields() -> tuple[set[str], set[str]]:
    from nlgrad.runtime.executor import TaskResult  # here: the executor imports the run directory

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
