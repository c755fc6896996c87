"""``nlgrad eval``: run a program on a benchmark split with the configured LM and an optional policy."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from nlgrad.config import Settings
from nlgrad.errors import ConfigError
from nlgrad.interrupt import Interrupted
from nlgrad.lm.client import LM, check_models
from nlgrad.lm.ledger import Ledger
from nlgrad.runlock import RunLock
from nlgrad.policy import PolicyMemory
from nlgrad.policy.view import PLACEMENTS
from nlgrad.runtime.executor import RunResult
from nlgrad.runtime.ray_executor import EXECUTOR_KINDS, make_executor
from nlgrad.runtime.protocols import SPLITS, BenchmarkHints, EmptyPolicy, PolicySource, step_cap_for
from nlgrad.runtime.registry import load_benchmark, load_program
from nlgrad.runtime.resume_check import check_eval_resume
from nlgrad.runtime.rule_retrieval import Retriever
from nlgrad.runtime.rundir import RunDir, make_run_id
from nlgrad.text.embeddings import load_embedder

log = logging.getLogger(__name__)


def policy_from_option(path: str | Path | None, version: int | None = None, benchmark=None) -> PolicySource:
    """What ``--policy`` names: a policy memory directory or file (read by :func:`nlgrad.policy.load_policy`),
    ``"human"`` (the benchmark's human-written policy) or nothing (None: the empty policy)."""
    if path is None:
        return EmptyPolicy()
    if str(path) == "human":
        human = BenchmarkHints.of(benchmark).human_policy
        if human is None:
            raise ConfigError("this benchmark has no human-written policy", field="--policy", value="human")
        path = human
    return PolicyMemory.load(path, version=version)


def check_policy_routes(policy: PolicySource, program, source: str, *, field: str = "--policy") -> None:
    """A policy with rules, none of them on a route of ``program``, would change nothing: a clear error instead of a
    run that silently scores the empty policy (e.g. a single-agent policy given to a team program)."""
    routes_of = getattr(policy, "routes", None)
    active = getattr(policy, "active_entries", None)
    if routes_of is None or active is None:
        return
    used = [r for r in routes_of() if active(r)]
    if used and not set(used) & set(program.routes):
        raise ConfigError(f"the policy has rules only for routes {', '.join(used)}, but program {program.name} has "
                          f"routes {', '.join(program.routes)}", field=field, value=source)


@dataclass
class EvalRequest:
    benchmark: str
    split: str = "dev"
    n: int | None = 20
    workers: int | None = None  # None: the agent model's parallelism (a local server's slots)
    program: str | None = None
    policy: str | None = None
    policy_version: int | None = None
    policy_whole: bool = False  # show every entry to every call, conditions (match patterns) ignored
    policy_placement: str = "system"  # "input": lessons before the task input; "demos": examples as prior turns
    step_cap: int | None = None
    timeout_s: float | None = None
    run_dir: str | None = None
    executor: str = "thread"
    ray_address: str | None = None
    retry_errors: bool = True  # on resume, run again the tasks whose saved result is an error
    examples_k: int | None = None  # show each call this many nearest examples instead of the policy's own k

    def validate(self) -> None:
        if self.executor not in EXECUTOR_KINDS:
            raise ConfigError(f"executor must be one of {', '.join(EXECUTOR_KINDS)}", field="--executor",
                              value=self.executor)
        if self.split not in SPLITS:
            raise ConfigError(f"split must be one of {', '.join(SPLITS)}", field="--split", value=self.split)
        if self.policy_placement not in PLACEMENTS:
            raise ConfigError(f"must be one of {', '.join(PLACEMENTS)}", field="--policy-placement",
                              value=self.policy_placement)
        if self.n is not None and self.n < 1:
            raise ConfigError("n must be at least 1", field="--n", value=self.n)
        if self.workers is not None and self.workers < 1:
            raise ConfigError("workers must be at least 1", field="--workers", value=self.workers)
        if self.step_cap is not None and self.step_cap < 1:
            raise ConfigError("step cap must be at least 1", field="--step-cap", value=self.step_cap)
        if self.examples_k is not None and self.examples_k < 1:
            raise ConfigError("examples k must be at least 1", field="--examples-k", value=self.examples_k)


def retrieval_hook(policy: Any):
    """For a rule pool whose ``selection`` is ``retrieval`` (JERP's policies): the per-task hook that shows each task
    its top-k rules chosen by the task's query, exactly as in the runs that learned it; None for any other policy."""
    selection = getattr(policy, "selection", None)
    if not isinstance(policy, PolicyMemory) or selection is None or selection.kind != "retrieval":
        return None
    return Retriever(load_embedder(selection.embedder), k=selection.k or 4, utility_weight=selection.utility_weight)


def with_examples_k(policy: Any, k: int, source: str) -> PolicyMemory:
    """``policy`` showing each call its ``k`` nearest example entries (a deployment's choice, the same for every
    policy it compares); only a policy whose selection is ``examples`` has such a k."""
    selection = getattr(policy, "selection", None)
    if not isinstance(policy, PolicyMemory) or selection is None or selection.kind != "examples":
        raise ConfigError("--examples-k needs a policy whose selection is 'examples' (worked examples shown per "
                          "input)", field="--policy", value=source)
    return policy.model_copy(update={"selection": selection.model_copy(update={"k": k})})


def run_eval(request: EvalRequest, settings: Settings, *, console: Console | None = None,
             progress: bool = True) -> tuple[RunResult, LM]:
    request.validate()
    check_models(settings, ("agent",))
    benchmark = load_benchmark(request.benchmark)
    program = load_program(request.program or benchmark.default_program, benchmark=benchmark)
    policy = policy_from_option(request.policy, request.policy_version, benchmark)
    if request.examples_k is not None:
        policy = with_examples_k(policy, request.examples_k, str(request.policy))
    if request.policy is not None and (request.policy_whole or request.policy_placement != "system"):
        from nlgrad.policy.view import PolicyView

        policy = PolicyView(policy, whole=request.policy_whole, placement=request.policy_placement)
    check_policy_routes(policy, program, str(request.policy))
    tasks = benchmark.tasks(request.split, request.n)
    step_cap = step_cap_for(benchmark, request.step_cap)
    config: dict[str, Any] = {
        "command": "eval", "benchmark": benchmark.id, "split": request.split, "n": len(tasks),
        "program": program.name, "policy": request.policy, "policy_version": request.policy_version,
        "policy_whole": request.policy_whole, "policy_placement": request.policy_placement,
        "policy_loaded_version": getattr(policy, "version", None),
        "workers": request.workers, "executor": request.executor, "step_cap": step_cap, "timeout_s": request.timeout_s,
        "roles": {name: {"model": r.model, "temperature": r.temperature, "max_tokens": r.max_tokens}
                  for name, r in settings.roles.items()},
        "cache": settings.use_cache,
    }
    if request.examples_k is not None:  # only when set, so run dirs written before the option still resume
        config["examples_k"] = request.examples_k
    path = Path(request.run_dir) if request.run_dir else Path(settings.runs_dir) / make_run_id(
        "eval", benchmark.id, request.split, config)
    run_dir = RunDir(path, retry_errors=request.retry_errors).create()
    with RunLock(path, field="--run-dir"):  # one live writer per run directory
        if request.run_dir is not None:  # resuming: the saved config must describe the same experiment
            check_eval_resume(run_dir.path / "config.json", config, value=str(path))
        run_dir.write_config(config)
        journal = run_dir.path / "ledger.jsonl"  # survives a kill; ledger.json totals every attempt of this run dir
        lm = LM(settings, ledger=Ledger(journal=journal))
        executor = make_executor(request.executor, ray_address=request.ray_address,
                                 benchmark=benchmark, program=program, lm=lm, policy=policy, workers=request.workers,
                                 step_cap=step_cap, timeout_s=request.timeout_s, run_dir=run_dir, progress=progress,
                                 console=console, label=f"eval {benchmark.id}/{request.split}",
                                 policy_for_task=retrieval_hook(policy))
        try:
            result = executor.run(tasks, resume=request.run_dir is not None)
        except KeyboardInterrupt as exc:
            kept = len(run_dir.load_results(include_errors=True))
            raise Interrupted.of(exc, f"{kept} of {len(tasks)} task results are saved in {path}",
                                 ("--run-dir", str(path))) from exc
        Ledger.replay(journal).save(run_dir.path / "ledger.json")
        flag_silent_conditions(policy, run_dir, tasks, result)
        add_benchmark_metrics(benchmark, run_dir, result)
    return result, lm


def add_benchmark_metrics(benchmark: Any, run_dir: RunDir, result: RunResult) -> None:
    """Aggregates the benchmark computes itself (``summary_metrics`` over ``(gold, predicted)`` of each result's
    details: CLINC150's in-scope accuracy and out-of-scope recall), as ``summary["metrics"]``."""
    summarize = getattr(benchmark, "summary_metrics", None)
    if summarize is None:
        return
    pairs = [(r.details["gold"], r.details.get("predicted")) for r in result.results
             if r.error is None and "gold" in (r.details or {})]
    metrics = summarize(pairs)
    if metrics:
        result.summary["metrics"] = metrics
        run_dir.write_summary(result.summary)


def flag_silent_conditions(policy: Any, run_dir: RunDir, tasks: list, result: RunResult) -> None:
    """Record (``summary["conditions_never_shown"]``) and log the conditional entries of the evaluated policy that
    no module call of this split was shown: their condition matched none of the split's inputs."""
    from nlgrad.policy.relevance import conditions_never_shown
    from nlgrad.runtime.trace import Trace

    memory = getattr(policy, "memory", policy)
    if not isinstance(memory, PolicyMemory) or not any(e.match for r in memory.routes()
                                                       for e in memory.active_entries(r)):
        return
    calls = []
    for task in tasks:
        path = run_dir.trace_path(task.id)
        if path.exists():
            calls += [(n["route"], n.get("policy_entries") or []) for n in Trace.load(path).module_calls()]
    silent = conditions_never_shown({r: memory.active_entries(r) for r in memory.routes()}, calls)
    if silent:
        result.summary["conditions_never_shown"] = silent
        run_dir.write_summary(result.summary)
        log.warning("%d conditional entr%s shown to no call on this split (the condition matched no input): %s",
                    len(silent), "y was" if len(silent) == 1 else "ies were", ", ".join(silent))
