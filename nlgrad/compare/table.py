"""Aggregate seed records into one row per method, and render the rows as markdown and as a rich table.

Statistics (``nlgrad.stats``): a method's per-task score is the mean over its seeds; the test score is the mean
over tasks with a 95% percentile-bootstrap CI over tasks; the paired difference to the **strongest baseline** (the
baseline with the highest test mean, itself excluded) is the mean of per-task differences with its bootstrap CI.
Choosing the reference on the test split favours the baselines, so a positive difference is conservative.
Rollouts, tokens, $ and wall time are means per run (one method, one seed).
"""

from __future__ import annotations

import math
from statistics import fmean
from typing import Any

from nlgrad.compare.results import SeedRecord
from nlgrad.methods.registry import declared
from nlgrad.stats import bootstrap_ci, paired_difference


def is_baseline(method: str) -> bool:
    """Whether ``method`` may be the reference row: its class declares ``reference = True`` (the baselines)."""
    return bool(declared(method, "reference", False))


def per_task_means(records: list[SeedRecord], task_ids: list[str]) -> list[float] | None:
    """Mean over seeds of each task's score (None when no seed has every task)."""
    usable = [r for r in records if r.ok and all(t in r.test for t in task_ids)]
    if not usable or not task_ids:
        return None
    return [fmean(r.test[t] for r in usable) for t in task_ids]


def common_tasks(records: list[SeedRecord]) -> list[str]:
    """Test task ids that every usable record has, in the order of the first one (the benchmark's order)."""
    usable = [r for r in records if r.ok]
    if not usable:
        return []
    shared = set(usable[0].test)
    for r in usable[1:]:
        shared &= set(r.test)
    return [t for t in usable[0].test if t in shared]


def aggregate(records: list[SeedRecord], methods: list[str]) -> tuple[list[dict[str, Any]], str | None, list[str]]:
    """``(rows, reference method, paired task ids)``; rows follow the order of ``methods``."""
    task_ids = common_tasks(records)
    by_method = {m: [r for r in records if r.method == m] for m in methods}
    means = {m: per_task_means(rs, task_ids) for m, rs in by_method.items()}
    baselines = [m for m in methods if is_baseline(m) and means[m] is not None]
    reference = max(baselines, key=lambda m: (fmean(means[m]), -methods.index(m))) if baselines else None
    rows = []
    for method in methods:
        recs = by_method[method]
        ok = [r for r in recs if r.ok]
        row: dict[str, Any] = {"method": method, "kind": "baseline" if is_baseline(method) else "method",
                               "seeds": len(ok), "seeds_total": len(recs), "n_tasks": len(task_ids),
                               "status": "ok" if ok else (recs[0].status if recs else "missing"),
                               "reason": "; ".join(sorted({r.reason for r in recs if r.reason and not r.ok})),
                               "mean": None, "ci95": None, "diff": None, "diff_ci95": None,
                               "rollouts": _avg([r.rollouts for r in ok]), "tokens": _avg([r.tokens for r in ok]),
                               "tokens_spent": _avg([r.tokens_spent for r in ok]), "usd": _avg([r.usd for r in ok]),
                               "wall_s": _avg([r.wall_s for r in ok]),
                               "success_rate": _avg([fmean(r.success.values()) for r in ok if r.success])}
        scores = means[method]
        if scores is not None:
            est = bootstrap_ci(scores)
            row["mean"], row["ci95"] = est.mean, [est.lo, est.hi]
            if reference is not None and method != reference:
                diff = paired_difference(scores, means[reference])
                row["diff"], row["diff_ci95"] = diff.mean, [diff.lo, diff.hi]
        row["reference"] = method == reference
        rows.append(row)
    return rows, reference, task_ids


def _avg(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return fmean(values) if values else None


# ---- formatting ------------------------------------------------------------------------------------------------
COLUMNS = ("method", "test score", "95% CI", "Δ vs {ref} [95% CI]", "rollouts", "tokens", "$", "wall")


def _num(value: float | None, fmt: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


def _wall(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 120:
        return f"{seconds:.0f}s"
    return f"{seconds / 60:.1f}m" if seconds < 7200 else f"{seconds / 3600:.1f}h"


def format_row(row: dict[str, Any]) -> list[str]:
    name = row["method"] + (" (reference)" if row.get("reference") else "")
    if row["mean"] is None:
        why = f"{row['status']}: {row['reason']}" if row.get("reason") else row.get("status", "missing")
        return [name, "n/a", "–", why[:160], "–", "–", "–", "–"]
    ci = f"[{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}]"
    diff = "–"
    if row["diff"] is not None:
        lo, hi = row["diff_ci95"]
        diff = f"{row['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
    seeds = f" ({row['seeds']}/{row['seeds_total']} seeds)" if row["seeds"] < row["seeds_total"] else ""
    return [name + seeds, f"{row['mean']:.3f}", ci, diff, _num(row["rollouts"], ".0f"), _num(row["tokens"], ",.0f"),
            _num(row["usd"], ".4f"), _wall(row["wall_s"])]


def headers(reference: str | None) -> list[str]:
    return [c.format(ref=reference or "strongest baseline") for c in COLUMNS]


def to_markdown(rows: list[dict[str, Any]], reference: str | None, *, title: str | None = None,
                note: str | None = None) -> str:
    head = headers(reference)
    lines = [f"### {title}", ""] if title else []
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for row in rows:
        cells = [c.replace("|", "\\|") for c in format_row(row)]
        lines.append("| " + " | ".join(cells) + " |")
    if note:
        lines += ["", note]
    return "\n".join(lines) + "\n"


def to_rich(rows: list[dict[str, Any]], reference: str | None, *, title: str = "Comparison (test split)"):
    from rich.table import Table

    table = Table(title=title)
    for i, col in enumerate(headers(reference)):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*format_row(row))
    return table
