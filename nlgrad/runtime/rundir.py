"""A run directory: ``runs/<run-id>/`` with config.json, traces/<task>.json, results.jsonl, summary.json, ledger.json."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from nlgrad.errors import ConfigError
from nlgrad.files import read_jsonl, write_json_atomic
from nlgrad.journal import append_line
from nlgrad.runtime.task_result import check_result_fields
from nlgrad.runtime.trace import Trace

log = logging.getLogger(__name__)


def make_run_id(kind: str, benchmark: str, split: str, config: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:6]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", benchmark).strip("-")
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}-{slug}-{split}-{digest}"


def _safe_name(task_id: str) -> str:
    """A file name for ``task_id``, distinct for distinct ids: characters other than letters, digits, ``.``, ``_``
    and ``-`` are percent-encoded (``a:b`` -> ``a%3Ab``, ``a?b`` -> ``a%3Fb``); a name past 120 characters is cut
    and ends with a hash of the whole id."""
    name = quote(task_id, safe="._-")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name) > 120:
        name = name[:103] + "-" + hashlib.sha256(task_id.encode()).hexdigest()[:16]
    return name


def _legacy_name(task_id: str) -> str:
    """The file name earlier versions used (lossy: ``a:b`` and ``a?b`` both became ``a_b``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", task_id)[:120]


class RunDir:
    """``retry_errors``: on resume, :meth:`load_results` leaves out error results, so the executor runs those tasks
    again (their new result is appended; the latest line of a task wins)."""

    def __init__(self, path: str | Path, *, retry_errors: bool = True):
        self.path = Path(path)
        self.retry_errors = retry_errors
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
        """Where the trace of ``task_id`` is (a run dir written by an earlier version: its lossy name, if only that
        exists)."""
        path = self.path / "traces" / f"{_safe_name(task_id)}.json"
        if not path.exists():
            legacy = self.path / "traces" / f"{_legacy_name(task_id)}.json"
            if legacy.exists():
                return legacy
        return path

    def save_trace(self, trace: Trace) -> Path:
        path = self.path / "traces" / f"{_safe_name(trace.task_id)}.json"
        trace.save(path)
        return path

    def append_result(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)
        with self._lock:
            append_line(self.path / "results.jsonl", line)  # a torn line from a killed writer is cut off first

    def load_results(self, *, include_errors: bool | None = None) -> dict[str, dict[str, Any]]:
        """Completed results by task id (the latest line of a task wins); a torn line (crash mid-write) is skipped.
        Error results are left out (so a resume runs them again) when ``retry_errors`` is set, unless
        ``include_errors`` (for reading a finished run) says otherwise. A line with unknown or missing fields is a
        ConfigError naming the file, the record and the fields."""
        path = self.path / "results.jsonl"
        out: dict[str, dict[str, Any]] = {}
        if not path.exists():
            return out
        for number, record in enumerate(read_jsonl(path), start=1):
            if isinstance(record, dict) and "task_id" in record:
                check_result_fields(record, path, number)
                out[record["task_id"]] = record
        if not (include_errors if include_errors is not None else not self.retry_errors):
            failed = [tid for tid, record in out.items() if record.get("error")]
            if failed:
                log.info("%s: %d error result(s) will be run again: %s", path, len(failed), ", ".join(failed[:5]))
            out = {tid: record for tid, record in out.items() if not record.get("error")}
        return out

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json_atomic(self.path / "summary.json", summary)
