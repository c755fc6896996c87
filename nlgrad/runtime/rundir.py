"""A run directory: ``runs/<run-id>/`` with config.json, traces/<task>.json, results.jsonl, summary.json, ledger.json."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from nlgrad.errors import ConfigError
from nlgrad.files import read_jsonl, write_json_atomic
from nlgrad.runtime.trace import Trace


def make_run_id(kind: str, benchmark: str, split: str, config: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:6]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", benchmark).strip("-")
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}-{slug}-{split}-{digest}"


def _safe_name(task_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", task_id)[:120]


class RunDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    def create(self) -> "RunDir":
        try:
            (self.path / "traces").mkdir(parents=True, exist_ok=True)
            probe = self.path / ".write-probe"
            probe.write_text("ok")
            probe.unlink()
        except OSError as exc:
            raise ConfigError(f"cannot write the run directory: {exc.strerror}", field="runs_dir",
                              value=str(self.path)) from None
        return self

    def write_config(self, config: dict[str, Any]) -> None:
        write_json_atomic(self.path / "config.json", config)

    def trace_path(self, task_id: str) -> Path:
        return self.path / "traces" / f"{_safe_name(task_id)}.json"

    def save_trace(self, trace: Trace) -> Path:
        path = self.trace_path(trace.task_id)
        trace.save(path)
        return path

    def append_result(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str) + "\n"
        path = self.path / "results.jsonl"
        with self._lock, open(path, "a", encoding="utf-8") as fh:
            if fh.tell() > 0:
                with open(path, "rb") as check:
                    check.seek(-1, os.SEEK_END)
                    if check.read(1) != b"\n":  # a torn line from a killed writer: start on a fresh line
                        line = "\n" + line
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def load_results(self) -> dict[str, dict[str, Any]]:
        """Completed results by task id; a torn last line (crash mid-write) is ignored."""
        path = self.path / "results.jsonl"
        out: dict[str, dict[str, Any]] = {}
        if not path.exists():
            return out
        for record in read_jsonl(path):
            if isinstance(record, dict) and "task_id" in record:
                out[record["task_id"]] = record
        return out

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json_atomic(self.path / "summary.json", summary)
