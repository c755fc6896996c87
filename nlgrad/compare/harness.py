"""``nlgrad compare``: every method on the same frozen agent, budget, seeds and held-out test tasks.

For each method and seed: run ``nlgrad.optimize.run_optimize`` (or a static baseline through the same loop) into
``<out>/<method>/seed<k>/`` with the same ``OptimizeConfig`` except the method, a rollout budget counted from the
executor's files, and a metered LM (see :mod:`nlgrad.compare.metering`); then evaluate the final policy on the
first ``test_n`` test tasks (the same tasks for every method, so differences are paired). A finished (method, seed)
writes ``record.json`` and is skipped by a rerun of the same command; an interrupted one resumes (the optimize
loop's own resume, the executor's ``results.jsonl`` and the LM cache). ``only_seeds`` runs a subset of the seeds
(outputs then cover those seeds only). A method that cannot run here (a missing library, a benchmark without a
human policy) becomes a row that says why, and the comparison goes on.

What a method needs it declares on its class, and the harness reads it (:func:`optimize_config`): ``one_shot = True``
(run once: iterations=1; the others iterate until the budget is spent), ``budget_option = "NAME"`` (told the
rollout budget directly) and ``starting_policy(options, benchmark)`` (the run starts from that policy). A row named
``train:<method>`` (the companion trainer's registry, :data:`nlgrad.trainer.estimators.COMPARE_PREFIX`) trains
weights instead (:mod:`nlgrad.trainer.compare_row`) and is read back from its ``external.json``.
"""

from __future__ import annotations

import math
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console

from nlgrad.compare.metering import GrossLedgerFile, RunBudget, metered_optimize_lm
from nlgrad.compare.results import (EXTERNAL_NAME, CompareResults, SeedRecord, count_rollouts, learning_curve,
                                    read_external, seed_dir)
from nlgrad.config import Settings
from nlgrad.errors import ConfigError
from nlgrad.files import write_json_atomic
from nlgrad.interrupt import Interrupted
from nlgrad.lm.client import LM
from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.options import check_method_options
from nlgrad.methods.registry import method_class
from nlgrad.runtime.ray_executor import executor_for
from nlgrad.runtime.registry import load_benchmark, load_program
from nlgrad.runtime.rundir import RunDir
from nlgrad.trainer.compare_row import check_row_options, row_config, run_row
from nlgrad.trainer.estimators import COMPARE_PREFIX


class CompareConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark: str
    methods: list[str] = Field(min_length=1)
    budget_rollouts: int = Field(ge=1)
    seeds: int = Field(default=3, ge=1)
    test_n: int = Field(default=20, ge=1)
    val: int = Field(default=30, ge=1)
    batch: int = Field(default=6, ge=1)
    workers: int | None = Field(default=None, ge=1)  # None: the agent model's parallelism
    step_cap: int | None = Field(default=None, ge=1)
    program: str | None = None
    budget_tokens: int | None = Field(default=None, ge=1)
    gate_min_wins: int = Field(default=2, ge=1)
    gate_require_ci: bool | None = None
    method_options: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def comparable(self) -> dict[str, Any]:
        """What a rerun into the same folder must share (methods and seeds may grow; workers may change)."""
        return self.model_dump(mode="json", exclude={"methods", "seeds", "workers"})


def is_trainer_row(method: str) -> bool:
    """Whether ``method`` names a companion-trainer row (``train:<method>``) rather than a text method."""
    return method.startswith(COMPARE_PREFIX)


def check_options(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """A row's ``--method-option``s, checked: a trainer row's against the trainer's options, a text method's against
    its constructor (:func:`~nlgrad.methods.options.check_method_options`)."""
    return check_row_options(method, options) if is_trainer_row(method) else check_method_options(method, options)


def _check_settings(out: Path, config: CompareConfig) -> None:
    path = out / "compare.json"
    if path.exists():
        import json

        previous = CompareConfig.model_validate(json.loads(path.read_text(encoding="utf-8")))
        if previous.comparable() != config.comparable():
            raise ConfigError("this output folder holds a comparison with different settings; rerun with the same "
                              "options (methods and seeds may be added) or choose a new --out",
                              field="--out", value=str(out))
        merged = config.model_copy(update={"methods": list(dict.fromkeys(previous.methods + config.methods)),
                                           "seeds": max(previous.seeds, config.seeds)})
        write_json_atomic(path, merged.model_dump(mode="json"))
    else:
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, config.model_dump(mode="json"))


def optimize_config(config: CompareConfig, method: str, seed: int, benchmark) -> OptimizeConfig:
    options = dict(config.method_options.get(method, {}))
    declared = method_class(method)  # one_shot, budget_option, starting_policy (None: not importable here)
    budget_option = getattr(declared, "budget_option", None)
    if budget_option:
        options.setdefault(budget_option, config.budget_rollouts)
    starting_policy = getattr(declared, "starting_policy", None)
    init_policy = starting_policy(options, benchmark) if starting_policy is not None else None
    one_shot = getattr(declared, "one_shot", False)
    iterations = 1 if one_shot else max(1, math.ceil(config.budget_rollouts / config.batch))
    return OptimizeConfig(method=method, benchmark=config.benchmark, program=config.program, iterations=iterations,
                          batch=config.batch, val=config.val, test_n=0, seed=seed, workers=config.workers,
                          step_cap=config.step_cap, init_policy=init_policy, gate_min_wins=config.gate_min_wins,
                          gate_require_ci=config.gate_require_ci, method_options=options)


class Harness:
    """Runs one comparison. ``run()`` returns the aggregated :class:`CompareResults` (also written to disk)."""

    def __init__(self, config: CompareConfig, settings: Settings, out: Path, *, console: Console | None = None,
                 progress: bool = False, on_record: Callable[[SeedRecord], None] | None = None,
                 only_seeds: list[int] | None = None):
        self.config, self.settings, self.out = config, settings, Path(out)
        self.seeds = selected_seeds(config.seeds, only_seeds)
        self.console = console or Console(stderr=True)
        self.progress, self.on_record = progress, on_record
        self.benchmark = load_benchmark(config.benchmark)
        self.program = load_program(config.program or self.benchmark.default_program, benchmark=self.benchmark)
        self.test_tasks = self.benchmark.tasks("test", config.test_n)

    # ---- one (method, seed) ------------------------------------------------------------------------------------
    def run_seed(self, method: str, seed: int) -> SeedRecord:
        sd = seed_dir(self.out, method, seed)
        done = SeedRecord.load(sd)
        if done is not None and done.ok:
            return done
        sd.mkdir(parents=True, exist_ok=True)
        run = self._train_and_test if is_trainer_row(method) else self._optimize_and_test
        try:
            record = run(method, seed, sd)
        except ConfigError as exc:
            record = SeedRecord(method=method, seed=seed, status="unavailable", reason=str(exc))
        except Exception as exc:  # noqa: BLE001 - one broken method must not stop the comparison
            (sd / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
            record = SeedRecord(method=method, seed=seed, status="failed",
                                reason=f"{type(exc).__name__}: {str(exc)[:300]} (traceback in {sd / 'error.txt'})")
        record.save(sd)
        return record

    def _optimize_and_test(self, method: str, seed: int, sd: Path) -> SeedRecord:
        from nlgrad.optimize import run_optimize
        from nlgrad.policy import PolicyStore

        opt = optimize_config(self.config, method, seed, self.benchmark)
        gross = GrossLedgerFile(sd / "gross_ledger.json")
        budget = RunBudget(sd / "run", gross, rollouts=self.config.budget_rollouts, tokens=self.config.budget_tokens)
        wall_path = sd / "wall.json"
        import json

        wall_before = json.loads(wall_path.read_text())["wall_s"] if wall_path.exists() else 0.0
        start = time.monotonic()
        try:
            with metered_optimize_lm(gross.live):
                outcome = run_optimize(opt, self.settings, sd, budget=budget, console=self.console,
                                       progress=self.progress)
        finally:
            gross.save()
            write_json_atomic(wall_path, {"wall_s": wall_before + time.monotonic() - start})
        wall = wall_before + time.monotonic() - start
        store = PolicyStore(sd)
        memory = store.load(outcome.final_version)
        test_start = time.monotonic()
        run_dir = RunDir(sd / "test").create()
        # the same executor as the optimize run's own (opt: this comparison's workers and step cap), with a fresh LM
        result = executor_for(opt, benchmark=self.benchmark, program=self.program, lm=LM(self.settings), policy=memory,
                              run_dir=run_dir, label=f"test {method} seed {seed}",
                              policy_for_task=outcome.policy_for_task, progress=self.progress,
                              console=self.console).run(self.test_tasks, resume=True)
        total = gross.total().to_dict()
        state = outcome.state
        return SeedRecord(
            method=method, seed=seed, test={r.task_id: r.score for r in result.results},
            success={r.task_id: r.success for r in result.results}, rollouts=count_rollouts(sd / "run"),
            tokens=total["total"]["prompt_tokens"] + total["total"]["completion_tokens"],
            tokens_spent=outcome.ledger.total().total_tokens,
            tokens_by_role={k: v["prompt_tokens"] + v["completion_tokens"] for k, v in total["roles"].items()},
            usd=total["total"]["cost_usd"], wall_s=wall, test_wall_s=time.monotonic() - test_start,
            curve=learning_curve(sd / "run"), iterations=state.completed,
            accepted=sum(1 for r in state.history if r.accepted), stop_reason=state.stop_reason,
            final_version=outcome.final_version,
            policy={route: memory.render(route) for route in self.program.routes}, policy_dir=str(sd))

    def _train_and_test(self, row: str, seed: int, sd: Path) -> SeedRecord:
        """A trainer row: its ``external.json`` when one was placed there (a run elsewhere, e.g. on a GPU), else the
        trainer's run here under ``sd/train/`` on this comparison's budget, seed and test tasks."""
        if not (sd / EXTERNAL_NAME).exists():
            config = row_config(row, self.config.method_options.get(row, {}), benchmark=self.config.benchmark,
                                program=self.config.program, seed=seed, budget_rollouts=self.config.budget_rollouts,
                                test_n=self.config.test_n, step_cap=self.config.step_cap, workers=self.config.workers)
            write_json_atomic(sd / EXTERNAL_NAME, run_row(config, sd / "train", console=self.console))
        return read_external(sd, row, seed)

    # ---- everything ------------------------------------------------------------------------------------------
    def run(self) -> CompareResults:
        _check_settings(self.out, self.config)
        records: list[SeedRecord] = []
        for method in self.config.methods:
            for seed in self.seeds:
                self.console.print(f"[bold]{method}[/] seed {seed}: running", highlight=False)
                try:
                    record = self.run_seed(method, seed)
                except KeyboardInterrupt as exc:
                    total = len(self.config.methods) * len(self.seeds)
                    raise Interrupted.of(exc, f"{len(records)} of {total} (method, seed) runs are finished in "
                                              f"{self.out}; {method} seed {seed} keeps its finished work") from exc
                records.append(record)
                if self.on_record:
                    self.on_record(record)
                self.console.print(f"[bold]{method}[/] seed {seed}: {_describe(record)}", highlight=False)
        return write_outputs(self.out, self.config, records, self.program.routes)


def selected_seeds(seeds: int, only: list[int] | None) -> list[int]:
    """Seeds 0..seeds-1, or the subset ``only`` of them (one machine may run seed 1 while another runs seed 0)."""
    if not only:
        return list(range(seeds))
    outside = sorted({s for s in only if not 0 <= s < seeds})
    if outside:
        raise ConfigError(f"seeds {outside} are outside 0..{seeds - 1} (--seeds {seeds})", field="--only-seeds",
                          value=",".join(map(str, only)))
    return sorted(set(only))


def _describe(record: SeedRecord) -> str:
    if not record.ok:
        return f"{record.status} - {record.reason}"
    mean = sum(record.test.values()) / len(record.test)
    return (f"test {mean:.3f} on {len(record.test)} tasks, {record.rollouts} rollouts, {record.tokens} tokens, "
            f"{record.wall_s:.0f}s")


def write_outputs(out: Path, config: CompareConfig, records: list[SeedRecord], routes: list[str]) -> CompareResults:
    """results.json, table.md, the plots and report.html, from the seed records."""
    from nlgrad.compare.html import render_compare_report
    from nlgrad.compare.plots import plot_learning_curves, plot_test_scores
    from nlgrad.compare.table import aggregate, to_markdown

    rows, reference, task_ids = aggregate(records, config.methods)
    results = CompareResults(settings=config.model_dump(mode="json"), records=records, rows=rows,
                             reference=reference, test_task_ids=task_ids)
    results.save(out / "results.json")
    note = table_note(config, len(task_ids))
    (out / "table.md").write_text(to_markdown(rows, reference, title=f"{config.benchmark}", note=note),
                                  encoding="utf-8")
    plot_learning_curves(records, config.methods, out / "curves.png", title=f"{config.benchmark}: validation score")
    plot_test_scores(rows, out / "test_scores.png", title=f"{config.benchmark}: test score (95% CI)")
    render_compare_report(results, out, routes=routes)
    return results


def table_note(config: CompareConfig, n_tasks: int) -> str:
    return (f"Test split: the first {n_tasks} tasks, paired across methods; {config.seeds} seed(s) per method "
            f"(per-task scores averaged over seeds, 95% bootstrap CI over tasks). Budget: {config.budget_rollouts} "
            f"rollouts per run (checked between iterations); rollouts, tokens (all roles, cache hits included), "
            f"$ and wall time are means per run.")
