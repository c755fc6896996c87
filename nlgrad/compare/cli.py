"""``nlgrad compare`` and ``nlgrad report`` (registered on the main app by :func:`register`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    from nlgrad.methods import COMPARE_DEFAULT
    from nlgrad.cli_common import (CacheDirOpt, ConfigOpt, CriticOpt, LmOpt, NoCacheOpt, benchmark_agent, err,
                                   handles_errors, learning_settings_from_options, out, stops_cleanly, validated)

    @app.command("compare")
    @handles_errors
    @stops_cleanly
    def compare_cmd(
        benchmark: str = typer.Option(..., "--benchmark", "-b", help="Benchmark id, e.g. twx/coin."),
        methods: str = typer.Option(",".join(COMPARE_DEFAULT), "--methods", help=_methods_help()),
        budget_rollouts: int = typer.Option(..., "--budget-rollouts", help="Rollouts each optimizer may use."),
        seeds: int = typer.Option(3, "--seeds", help="Seeds per method (0..N-1)."),
        only_seeds: Optional[str] = typer.Option(
            None, "--only-seeds", metavar="K[,K...]",
            help="Run only these of the seeds 0..N-1 now (e.g. 1, to run seed 1 on another machine); the table "
                 "then covers them only."),
        out_dir: Path = typer.Option(..., "--out", help="Output folder, e.g. reports/coin (rerun to resume)."),
        test_n: int = typer.Option(20, "--test-n", help="Test tasks every final policy is scored on."),
        val: int = typer.Option(30, "--val", help="Dev tasks used for validation by every optimizer."),
        batch: int = typer.Option(6, "--batch", help="Train tasks per iteration."),
        workers: Optional[int] = typer.Option(None, "--workers", "-w", help="Parallel worker threads (default: as many as the agent model serves at once: a local server's slots)."),
        step_cap: Optional[int] = typer.Option(None, "--step-cap", help="Max environment steps per task."),
        program: Optional[str] = typer.Option(None, "--program", help="Agent program (default: the benchmark's)."),
        budget_tokens: Optional[int] = typer.Option(None, "--budget-tokens", help="Also stop at this many tokens."),
        gate_min_wins: int = typer.Option(2, "--gate-min-wins",
                                          help="Gate of every nlgrad method: validation tasks to win (all, if fewer)."),
        gate_require_ci: Optional[bool] = typer.Option(
            None, "--gate-require-ci/--no-gate-require-ci",
            help="Gate: the 95% CI of the paired difference must exclude 0 (default: required from 30 validation "
                 "tasks)."),
        method_option: list[str] = typer.Option(
            [], "--method-option", metavar="METHOD.NAME=VALUE",
            help="An option of one of --methods (repeatable): NAME is a constructor argument of METHOD, or a trainer "
                 "option of a trainer row (e.g. train:gigpo.model=PATH). VALUE is JSON when it parses (3, 0.5, true, "
                 "null, [\"a\"]), else a string. Unknown names are an error that lists the method's options."),
        lm: Optional[str] = LmOpt, critic_lm: Optional[str] = CriticOpt, config: Optional[Path] = ConfigOpt,
        no_cache: bool = NoCacheOpt, cache_dir: Optional[Path] = CacheDirOpt,
    ):
        """Run every method on the same agent, budget, seeds and test split; write a table, plots and report.html."""
        import time

        from nlgrad.compare.harness import CompareConfig, Harness, check_options
        from nlgrad.compare.table import to_rich
        from nlgrad.methods.options import parse_compare_options

        names = [m.strip() for m in methods.split(",") if m.strip()]
        options = parse_compare_options(method_option, methods=names, check=check_options)  # before any model
        settings = benchmark_agent(learning_settings_from_options(config, lm, critic_lm, no_cache, cache_dir, None),
                                   benchmark, lm)
        cfg = validated(CompareConfig, benchmark=benchmark, methods=names, budget_rollouts=budget_rollouts,
                        seeds=seeds, test_n=test_n, val=val, batch=batch, workers=workers, step_cap=step_cap,
                        program=program, budget_tokens=budget_tokens, gate_min_wins=gate_min_wins,
                        gate_require_ci=gate_require_ci, method_options=options)
        chosen = _seed_list(only_seeds)
        start = time.monotonic()
        results = Harness(cfg, settings, out_dir, console=err, progress=sys.stderr.isatty(),
                          only_seeds=chosen).run()
        out.print(to_rich(results.rows, results.reference, title=f"{benchmark}: test split "
                                                                 f"({len(results.test_task_ids)} tasks)"))
        out.print(f"wall time {time.monotonic() - start:.0f}s; table: {out_dir / 'table.md'}; "
                  f"report: {out_dir / 'report.html'}", soft_wrap=True)

    @app.command("report")
    @handles_errors
    def report_cmd(
        path: Path = typer.Argument(..., help="An optimize --out folder (policy store + run/), or its run/ folder."),
        out_file: Optional[Path] = typer.Option(None, "--out", help="Where to write the HTML (default: "
                                                                      "report.html in the policy folder)."),
    ):
        """Render one optimize run as a self-contained HTML report (curve, updates, policy diffs)."""
        from nlgrad.compare.html import render_run_report

        written = render_run_report(path, out_file)
        out.print(f"report: {written}", soft_wrap=True)


def _methods_help() -> str:
    """``--methods``' help, from the registries: the text methods, then the companion trainer's rows."""
    from nlgrad.methods.registry import method_names
    from nlgrad.trainer.estimators import compare_rows

    return (f"Comma-separated: {', '.join(method_names())}; trainer rows {', '.join(compare_rows())} (weights; "
            "--method-option train:NAME.model=PATH, extra 'train').")


def _seed_list(text: str | None) -> list[int] | None:
    """``--only-seeds`` as integers (None when not given)."""
    from nlgrad.errors import ConfigError

    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError("expected comma-separated seed numbers, e.g. 1 or 0,2", field="--only-seeds",
                          value=text) from None
