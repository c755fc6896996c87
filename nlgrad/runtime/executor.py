"""Run a program over tasks: W worker threads, deterministic seeds, step cap and timeout per task.

A task that raises is recorded as an error result (score 0) and never stops the batch, except for a full or failing
disk (:class:`~nlgrad.errors.StorageError`, or an OSError with ENOSPC, EDQUOT, EIO or EROFS): raised in a task or
while writing its result or trace, it stops the run at once (tasks not started are cancelled, none is saved as an
error) and the same command resumes once space is back. Each finished task appends one line to ``results.jsonl`` and
writes its trace, so an interrupted run can resume where it stopped; a SIGTERM or SIGINT (under
:func:`nlgrad.interrupt.signals_stop_the_run`) starts no further task and ends those in flight at their next LM call,
unrecorded.

``policy_for_task`` (optional) is the per-task policy seam: called once per task, after its :class:`RunContext` is
built (``ctx.policy`` is then the executor's ``policy``) and before the program runs; what it returns is
``ctx.policy`` for the whole episode. A method that gives each task its own view of the policy (JERP's retrieval of
the top-k rules) supplies it; the returned policy may defer work to its first ``render`` (after the environment
reset, so the first observation is known) and may record what it chose in ``ctx.trace``.
"""

from __future__ import annotations

import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from nlgrad.errors import StepCapReached, StorageError
from nlgrad.files import STORAGE_ERRNOS
from nlgrad.interrupt import held
from nlgrad.lm.client import LM
from nlgrad.redact import redact
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.protocols import Benchmark, Environment, PolicySource, Program, Task, distinct_tasks
from nlgrad.runtime.rundir import RunDir
from nlgrad.runtime.task_result import TaskResult
from nlgrad.runtime.trace import Trace, to_jsonable
from nlgrad.stats import bootstrap_ci


@dataclass
class RunResult:
    results: list[TaskResult]
    summary: dict[str, Any]
    run_dir: RunDir | None = None
    traces: dict[str, Trace] = field(default_factory=dict)

    @property
    def scores(self) -> list[float]:
        return [r.score for r in self.results]


PolicyForTask = Callable[[Task, RunContext], PolicySource]


def summarize(results: list[TaskResult], wall_s: float) -> dict[str, Any]:
    est = bootstrap_ci([r.score for r in results])
    succ = bootstrap_ci([float(r.success) for r in results])
    return {
        "n": len(results),
        "score": est.to_dict(),
        "success_rate": succ.to_dict(),
        "errors": sum(r.error is not None for r in results),
        "mean_steps": (sum(r.steps for r in results) / len(results)) if results else 0.0,
        "tokens": sum(r.tokens for r in results),
        "wall_s": wall_s,
    }


class Executor:
    def __init__(self, *, benchmark: Benchmark, program: Program, lm: LM, policy: PolicySource | None = None,
                 workers: int | None = None, step_cap: int | None = None, timeout_s: float | None = None,
                 run_dir: RunDir | None = None, progress: bool = True, keep_traces: bool = False,
                 console: Console | None = None, label: str = "eval", policy_for_task: PolicyForTask | None = None):
        if workers is None:  # as many tasks at once as the agent's model serves (a local server's slots)
            workers = lm.parallelism("agent")
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.benchmark, self.program, self.lm, self.policy = benchmark, program, lm, policy
        self.policy_for_task = policy_for_task
        self.workers, self.step_cap, self.timeout_s = workers, step_cap, timeout_s
        self.run_dir, self.progress, self.keep_traces = run_dir, progress, keep_traces
        self.console = console or Console(stderr=True)
        self.label = label
        self._envs = threading.local()
        self._all_envs: list[Environment] = []
        self._env_lock = threading.Lock()

    # ---- environment pool: one environment per worker thread, reused across its tasks ------------------------
    def _env(self) -> Environment | None:
        if getattr(self.benchmark, "kind", "static") != "interactive":
            return None
        env = getattr(self._envs, "env", None)
        if env is None:
            env = self.benchmark.make_env()
            self._envs.env = env
            with self._env_lock:
                self._all_envs.append(env)
        return env

    def _close_envs(self) -> None:
        with self._env_lock:
            for env in self._all_envs:
                try:
                    env.close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass
            self._all_envs.clear()

    # ---- one task -------------------------------------------------------------------------------------------
    def run_task(self, task: Task) -> tuple[TaskResult, Trace]:
        trace = Trace(task_id=task.id, program=getattr(self.program, "name", type(self.program).__name__),
                      meta={"split": task.split, "seed": task.seed, "benchmark": getattr(self.benchmark, "id", "")})
        start = time.monotonic()
        deadline = start + self.timeout_s if self.timeout_s else None
        output: Any = None
        error: str | None = None
        ctx = None
        try:
            ctx = RunContext(task=task, lm=self.lm, trace=trace, policy=self.policy, env=self._env(),
                             step_cap=self.step_cap, deadline=deadline)
            if self.policy_for_task is not None:
                ctx.policy = self.policy_for_task(task, ctx)
            try:
                output = self.program.run(task, ctx)
            except StepCapReached:
                output = None
            metric = self.benchmark.metric(task, output, ctx.episode)
        except StorageError:
            raise  # a full or failing disk stops the run; it is not the task's result
        except Exception as exc:  # noqa: BLE001 - a failing task is a result, not a crash
            if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
                raise StorageError(f"a file of task {task.id}", exc) from exc
            error = redact(f"{type(exc).__name__}: {exc}")
            trace.graph.graph["error"] = error
            trace.graph.graph["traceback"] = redact(traceback.format_exc(limit=8))
            metric = None
        trace.add_node("output", "task.output", parents=[n["id"] for n in trace.nodes()
                                                                    if not trace.children(n["id"])],
                                  output=output, score=metric.score if metric else 0.0,
                                  success=metric.success if metric else False,
                                  feedback=metric.feedback if metric else (error or ""))
        episode = ctx.episode if ctx else None
        result = TaskResult(
            task_id=task.id, split=task.split, seed=task.seed,
            score=metric.score if metric else 0.0, success=metric.success if metric else False,
            feedback=metric.feedback if metric else f"the program raised an error: {error}",
            error=error, steps=episode.steps if episode else 0, tokens=trace.tokens(),
            latency_s=time.monotonic() - start, output=to_jsonable(output),
            details=metric.details if metric else {},
        )
        return result, trace

    # ---- many tasks -----------------------------------------------------------------------------------------
    def run(self, tasks: list[Task], *, resume: bool = False) -> RunResult:
        done: dict[str, dict[str, Any]] = self.run_dir.load_results() if (resume and self.run_dir) else {}
        unique = distinct_tasks(tasks, self.source)  # a repeated id must name one task; it runs once
        todo = [t for t in unique if t.id not in done]
        results: dict[str, TaskResult] = {tid: TaskResult(**rec) for tid, rec in done.items()}
        traces: dict[str, Trace] = {}
        start = time.monotonic()
        progress = self._progress_bar()
        try:
            with progress:
                bar = progress.add_task(self.label, total=len(unique), completed=len(unique) - len(todo),
                                        score=_fmt_mean(list(results.values())), tokens=0)
                with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="nlgrad-task") as pool:
                    futures = {pool.submit(self.run_task, task): task for task in todo}
                    try:
                        for future in as_completed(futures):
                            result, trace = future.result()
                            self._record(result, trace, results, traces, progress, bar)
                    except BaseException:
                        # a full disk (StorageError), Ctrl-C, a crash: start no further task; only those already
                        # running finish (unrecorded), instead of the whole batch running for nothing
                        pool.shutdown(wait=True, cancel_futures=True)
                        raise
        finally:
            self._close_envs()
        return self._finish(tasks, results, traces, start)

    # ---- bookkeeping shared with RayExecutor --------------------------------------------------------------
    @property
    def source(self) -> str:
        """The benchmark's id (its class name if it has none), for error messages."""
        return str(getattr(self.benchmark, "id", None) or type(self.benchmark).__name__)

    def _progress_bar(self) -> Progress:
        columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("score {task.fields[score]}"), TextColumn("tok {task.fields[tokens]}"),
                   TimeElapsedColumn(), TimeRemainingColumn()]
        return Progress(*columns, console=self.console, disable=not self.progress, transient=False)

    def _record(self, result: TaskResult, trace: Trace, results: dict[str, TaskResult], traces: dict[str, Trace],
                progress: Progress, bar: Any) -> None:
        """Keep one finished task: into ``results`` (and ``traces`` if kept), the run directory, the progress bar. A
        SIGTERM or SIGINT that arrives meanwhile takes effect after it (:func:`~nlgrad.interrupt.held`): the trace and
        the result line are written whole."""
        with held():
            results[result.task_id] = result
            if self.keep_traces:
                traces[result.task_id] = trace
            if self.run_dir is not None:
                self.run_dir.save_trace(trace)
                self.run_dir.append_result(result.to_dict())
        progress.update(bar, advance=1, score=_fmt_mean(list(results.values())),
                        tokens=self.lm.ledger.total().total_tokens)

    def _finish(self, tasks: list[Task], results: dict[str, TaskResult], traces: dict[str, Trace],
                start: float) -> RunResult:
        """Order the results as ``tasks``, summarize them and write the summary to the run directory."""
        ordered = [results[t.id] for t in tasks if t.id in results]
        summary = summarize(ordered, time.monotonic() - start)
        if self.run_dir is not None:
            self.run_dir.write_summary(summary)
        return RunResult(results=ordered, summary=summary, run_dir=self.run_dir, traces=traces)


def _fmt_mean(results: list[TaskResult]) -> str:
    if not results:
        return "-"
    return f"{sum(r.score for r in results) / len(results):.3f}"
