"""What a comparison records per (method, seed), and how it is read back from the files every method writes.

Layout of ``nlgrad compare --out DIR``::

    DIR/compare.json                    the comparison's settings (a rerun must match them)
    DIR/<method>/seed<k>/               an ``nlgrad optimize`` output folder (policy store v*.json + run/)
    DIR/<method>/seed<k>/run/           config.json, state.json, ledger.json, iter-NNNN/<label>/results.jsonl
    DIR/<method>/seed<k>/test/          the final policy on the test split (results.jsonl, traces/)
    DIR/<method>/seed<k>/gross_ledger.json, wall.json   tokens (cache hits included) and optimizing time so far
    DIR/<method>/seed<k>/record.json    this (method, seed)'s :class:`SeedRecord` (written when it is done)
    DIR/results.json, table.md, curves.png, test_scores.png, report.html

Budgets are counted the same way for every method, from files rather than from each method's own accounting:

- **rollouts**: task runs recorded by the executor while optimizing (lines of ``results.jsonl`` under
  ``run/iter-*/``; the test evaluation is not counted). A rollout served from the LM cache still counts.
- **tokens**: prompt + completion tokens of every LM call the run made through nlgrad's ``LM`` (agent, critic,
  optimizer; the baselines' own optimizer calls go through it too), *including calls served by the cache* (so
  the number does not depend on which method ran first); ``tokens_spent`` is what reached a model.
- **$**: litellm's price for those tokens (0 for local models); **wall**: seconds spent optimizing.

Trainer rows (``train:<method>``, the companion trainer: :mod:`nlgrad.trainer.compare_row` trains one and writes it,
or ``nlgrad train --external`` on another machine): a file ``DIR/<method>/seed<k>/external.json`` with
``{"test": {task_id: score}, "rollouts": int, "tokens": int, "usd": float, "wall_s": float, "policy": str,
"curve": [[rollouts, val_score], ...], "note": str}`` is read as that seed's record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from nlgrad.files import read_jsonl, write_json_atomic

RECORD_NAME = "record.json"
EXTERNAL_NAME = "external.json"


class SeedRecord(BaseModel):
    """One (method, seed): the final policy's test scores and what it cost to get it."""

    method: str
    seed: int
    status: str = "ok"  # ok | unavailable | failed | missing
    reason: str = ""
    test: dict[str, float] = Field(default_factory=dict)  # task id -> score (paired across methods)
    success: dict[str, bool] = Field(default_factory=dict)
    rollouts: int = 0
    tokens: int = 0
    tokens_spent: int = 0
    tokens_by_role: dict[str, int] = Field(default_factory=dict)
    usd: float = 0.0
    wall_s: float = 0.0
    test_wall_s: float = 0.0
    curve: list[tuple[int, float]] = Field(default_factory=list)  # (cumulative rollouts, validation score)
    iterations: int = 0
    accepted: int = 0
    stop_reason: str | None = None
    final_version: int | None = None
    policy: dict[str, str] = Field(default_factory=dict)  # route -> rendered policy text of the final version
    policy_dir: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.test)

    def save(self, seed_dir: Path) -> None:
        write_json_atomic(seed_dir / RECORD_NAME, self.model_dump(mode="json"))

    @classmethod
    def load(cls, seed_dir: Path) -> "SeedRecord | None":
        path = seed_dir / RECORD_NAME
        if not path.exists():
            return None
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


def seed_dir(out: Path, method: str, seed: int) -> Path:
    return out / method / f"seed{seed}"


# ---- counting from files ---------------------------------------------------------------------------------------
def _count_lines(path: Path) -> int:
    """Task results in a results.jsonl (distinct task ids; a torn last line is ignored)."""
    return len({r["task_id"] for r in read_jsonl(path) if isinstance(r, dict) and "task_id" in r})


def rollouts_by_iteration(work_dir: Path) -> dict[int, int]:
    """``{iteration: rollouts}`` from ``work_dir/iter-NNNN/**/results.jsonl``."""
    out: dict[int, int] = {}
    for it_dir in sorted(work_dir.glob("iter-*")):
        try:
            iteration = int(it_dir.name.split("-", 1)[1])
        except ValueError:
            continue
        out[iteration] = sum(_count_lines(p) for p in it_dir.rglob("results.jsonl"))
    return out


def count_rollouts(work_dir: Path) -> int:
    return sum(rollouts_by_iteration(work_dir).values())


def learning_curve(work_dir: Path) -> list[tuple[int, float]]:
    """Validation score after each iteration vs cumulative rollouts, from ``state.json`` and the rollout folders.

    The score after an iteration is the gate's candidate mean when it was accepted, else the current policy's
    mean; an iteration without a gate keeps the last known score. The first gate's current-policy mean is the
    starting point at 0 rollouts."""
    path = work_dir / "state.json"
    if not path.exists():
        return []
    state = json.loads(path.read_text(encoding="utf-8"))
    per_iter = rollouts_by_iteration(work_dir)
    points: list[tuple[int, float]] = []
    cumulative, last = 0, None
    for record in sorted(state.get("history", []), key=lambda r: r["iteration"]):
        gate = record.get("gate") or {}
        if gate and last is None:
            points.append((0, float(gate.get("current_mean", 0.0))))
        cumulative += per_iter.get(record["iteration"], 0)
        if gate:
            last = float(gate["candidate_mean"] if record.get("accepted") else gate.get("current_mean", 0.0))
        if last is not None:
            points.append((cumulative, last))
    return points


def read_external(seed_path: Path, method: str, seed: int) -> SeedRecord | None:
    """A companion-trainer result placed at ``<seed dir>/external.json`` (see the module docstring)."""
    path = seed_path / EXTERNAL_NAME
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    policy = data.get("policy") or ""
    return SeedRecord(method=method, seed=seed, test={k: float(v) for k, v in (data.get("test") or {}).items()},
                      rollouts=int(data.get("rollouts", 0)), tokens=int(data.get("tokens", 0)),
                      tokens_spent=int(data.get("tokens", 0)), usd=float(data.get("usd", 0.0)),
                      wall_s=float(data.get("wall_s", 0.0)),
                      curve=[(int(x), float(y)) for x, y in data.get("curve", [])],
                      policy=policy if isinstance(policy, dict) else {"(weights)": str(policy)},
                      reason=str(data.get("note", "")), policy_dir=str(seed_path))


class CompareResults(BaseModel):
    """Everything ``results.json`` holds: the settings, every seed record, and the aggregated rows."""

    settings: dict[str, Any]
    records: list[SeedRecord]
    rows: list[dict[str, Any]] = Field(default_factory=list)
    reference: str | None = None  # the strongest baseline the paired differences are taken against
    test_task_ids: list[str] = Field(default_factory=list)

    def save(self, path: Path) -> None:
        write_json_atomic(path, self.model_dump(mode="json"))

    @classmethod
    def load(cls, path: Path) -> "CompareResults":
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))
