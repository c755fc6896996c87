"""Terminal rendering of summaries and ledgers (rich tables). Printing only; no logic."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from nlgrad.lm.ledger import Ledger


def summary_table(summary: dict, title: str = "Summary") -> Table:
    table = Table(title=title)
    for col in ("n", "mean score", "95% CI", "success rate", "errors", "mean steps", "tokens", "wall s"):
        table.add_column(col, justify="right")
    score, succ = summary["score"], summary["success_rate"]
    table.add_row(str(summary["n"]), f"{score['mean']:.3f}", f"[{score['ci95'][0]:.3f}, {score['ci95'][1]:.3f}]",
                  f"{succ['mean']:.3f}", str(summary["errors"]), f"{summary['mean_steps']:.1f}",
                  str(summary["tokens"]), f"{summary['wall_s']:.1f}")
    return table


def ledger_table(ledger: Ledger, title: str = "LM usage") -> Table:
    table = Table(title=title)
    for col in ("role", "calls", "cached", "prompt tok", "completion tok", "retries", "errors", "$", "LM wall s"):
        table.add_column(col, justify="right")
    data = ledger.to_dict()
    for name, u in list(data["roles"].items()) + [("total", data["total"])]:
        table.add_row(name, str(u["calls"]), str(u["cached"]), str(u["prompt_tokens"]), str(u["completion_tokens"]),
                      str(u["retries"]), str(u["errors"]), f"{u['cost_usd']:.4f}", f"{u['wall_s']:.1f}")
    return table


def print_run(console: Console, summary: dict, ledger: Ledger, run_path: str | None = None, title: str = "Summary"):
    console.print(summary_table(summary, title))
    console.print(ledger_table(ledger))
    if run_path:
        console.print(f"run directory: {run_path}")
