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
    if summary.get("metrics"):
        console.print("benchmark metrics: " + ", ".join(f"{k} {v:.3f}" for k, v in summary["metrics"].items()),
                      highlight=False, markup=False)
    if summary.get("conditions_never_shown"):
        console.print("conditional entries shown to no call on this split (their condition matched no input): "
                      + ", ".join(summary["conditions_never_shown"]), highlight=False, markup=False)
    if run_path:
        console.print(f"run directory: {run_path}")


def gate_diff_cell(gate: dict) -> str:
    """The iterations table's "paired diff [95% CI]" cell for a gate record; a decision made without a paired test
    (a library's own selection, a static baseline) shows its difference of means and says it has no interval."""
    if not gate:
        return "-"
    if gate.get("paired_test") is False:
        return f"{gate['mean_diff']:+.3f} (no paired test, no CI)"
    return f"{gate['mean_diff']:+.3f} [{gate['ci95'][0]:+.3f}, {gate['ci95'][1]:+.3f}]"


def print_optimize(console: Console, outcome, *, dry_run: bool = False) -> None:
    if dry_run:
        table = Table(title="Estimated LM calls (dry run)")
        table.add_column("what")
        table.add_column("calls", justify="right")
        for what, calls in outcome["calls"].items():
            table.add_row(what, str(calls))
        table.add_row("total", str(outcome["total_calls"]))
        console.print(table)
        if outcome.get("settings"):
            console.print("settings: " + ", ".join(f"{k} {v}" for k, v in outcome["settings"].items()
                                                   if v not in (None, {})), highlight=False, markup=False)
        console.print(outcome["note"])
        return
    state = outcome.state
    hist = Table(title="Iterations")
    for col in ("iter", "batch mean", "ops", "val candidate", "val current", "paired diff [95% CI]", "decision"):
        hist.add_column(col, justify="right")
    for rec in state.history:
        gate = rec.gate or {}
        diff = gate_diff_cell(gate)
        hist.add_row(str(rec.iteration), "-" if rec.batch_mean is None else f"{rec.batch_mean:.3f}", str(rec.n_ops),
                     f"{gate['candidate_mean']:.3f}" if gate else "-", f"{gate['current_mean']:.3f}" if gate else "-",
                     diff, ("accepted v%d" % rec.version) if rec.accepted else (gate.get("reason", rec.note) or "-"))
    console.print(hist)
    if state.stop_reason:
        console.print(f"stopped early: {state.stop_reason}")
    if outcome.test:
        test = outcome.test
        table = Table(title=f"Test split (n={test['n']}, never seen while optimizing)")
        for col in ("policy", "mean score", "95% CI", "success rate"):
            table.add_column(col, justify="right")
        for label in ("initial", "final"):
            s = test[label]
            table.add_row(f"{label} (v{s['version']})", f"{s['score']['mean']:.3f}",
                          f"[{s['score']['ci95'][0]:.3f}, {s['score']['ci95'][1]:.3f}]", f"{s['success_rate']['mean']:.3f}")
        d = test["paired_diff"]
        table.add_row("final - initial", f"{d['mean']:+.3f}", f"[{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]", "")
        console.print(table)
    console.print(ledger_table(outcome.ledger, title="LM usage (whole optimize run)"))
    entries = getattr(outcome, "final_entries", None)
    size = f", {entries} active entr{'y' if entries == 1 else 'ies'}" if entries is not None else ""
    console.print(f"policy: {outcome.work_dir.parent}  (final version v{outcome.final_version}{size}); run files: "
                  f"{outcome.work_dir}")
