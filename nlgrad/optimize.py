"""``nlgrad optimize``: the shared outer loop (propose -> gate -> commit/reject), resume, budgets, final test eval.

Layout of ``--out DIR``: the policy store (``v0001.json`` ..., ``manifest.json``, ``rejected.jsonl``) and ``run/``
with ``config.json``, ``state.json``, ``ledger.json``, one ``iter-NNNN/`` folder per iteration and ``final/``.
Killed at any point, the same command continues after the last completed iteration: batches are seeded by iteration,
finished rollouts are read back from ``results.jsonl``, and repeated LM calls are served by the cache.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from nlgrad.config import Settings
from nlgrad.errors import ConfigError
from nlgrad.evaluate import check_policy_routes
from nlgrad.files import write_json_atomic
from nlgrad.interrupt import Interrupted
from nlgrad.lm.client import LM, check_models
from nlgrad.lm.ledger import Ledger
from nlgrad.methods.base import IterationRecord, OptimizeConfig, OptimizeState, Workspace
from nlgrad.methods.budget import Budget
from nlgrad.methods.estimate import RunShape, iteration_calls
from nlgrad.methods.options import check_method_options
from nlgrad.methods.registry import load_method, method_class
from nlgrad.methods.strategies.acceptance import AcceptanceGate, GateDecision
from nlgrad.policy import PolicyMemory, PolicyStore
from nlgrad.runlock import RunLock
from nlgrad.runtime.executor import PolicyForTask, RunResult
from nlgrad.runtime.protocols import BenchmarkHints, step_cap_for
from nlgrad.runtime.registry import load_benchmark, load_program
from nlgrad.runtime.resume_check import check_identity, role_identity
from nlgrad.runtime.rundir import RunDir
from nlgrad.runtime.sampler import BatchSampler


# Settings an interactive benchmark gets when the command line does not set them: a TextWorldExpress run with the
# local models finishes in about 30 minutes on 2 cores. A benchmark may refine them with an ``optimize_defaults``
# dict; static benchmarks keep OptimizeConfig's defaults. An explicit value always wins.
KIND_DEFAULTS: dict[str, dict[str, Any]] = {
    "interactive": {"iterations": 2, "batch": 3, "val": 3, "test_n": 6, "step_cap": 20},
}
DEFAULTED = ("iterations", "batch", "val", "test_n", "step_cap")
RESUME_ROLES = ("agent", "critic", "optimizer")  # their models and sampling must match on resume


def benchmark_defaults(benchmark) -> dict[str, Any]:
    """The optimize settings ``benchmark`` gets by default: its kind's, updated by its own ``optimize_defaults``."""
    kind = getattr(benchmark, "kind", "static")
    return {**KIND_DEFAULTS.get(kind, {}), **dict(BenchmarkHints.of(benchmark).optimize_defaults or {})}


def resolve_config(**values: Any) -> OptimizeConfig:
    """An OptimizeConfig where each of ``DEFAULTED`` left as None is taken from the benchmark's defaults (else
    OptimizeConfig's); ``method_options`` are checked against the method. Loads the benchmark only when needed."""
    missing = [k for k in DEFAULTED if values.get(k) is None]
    defaults = benchmark_defaults(load_benchmark(values["benchmark"])) if missing else {}
    for key in missing:
        if key in defaults:
            values[key] = defaults[key]
        elif key != "step_cap":
            values.pop(key, None)
    if values.get("method_options"):
        method = values.get("method") or OptimizeConfig.model_fields["method"].default
        values["method_options"] = check_method_options(method, values["method_options"])
    return OptimizeConfig(**values)


@dataclass
class OptimizeOutcome:
    state: OptimizeState
    initial_version: int
    final_version: int
    test: dict[str, Any] | None
    ledger: Ledger
    work_dir: Path
    policy_for_task: PolicyForTask | None = None  # the method's per-task policy hook: evaluate with it
    final_entries: int | None = None  # active entries of the final version


def _initial_memory(config: OptimizeConfig, program) -> PolicyMemory:
    if config.init_policy:
        memory = PolicyMemory.load(config.init_policy)
        check_policy_routes(memory, program, config.init_policy, field="--init-policy")
        return memory.model_copy(update={"program": program.name, "benchmark": config.benchmark})
    return PolicyMemory(program=program.name, benchmark=config.benchmark, method="init")


def _check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-probe"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"cannot write the output directory: {exc.strerror}", field="--out", value=str(out)) from None


def _differences(work_dir: Path, config: OptimizeConfig) -> str:
    """``name: saved -> now`` for each resume-relevant setting that differs from the saved run/config.json."""
    try:
        saved = json.loads((work_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    now = config.resume_settings()
    return "; ".join(f"{key}: {saved.get(key)!r} -> {value!r}" for key, value in sorted(now.items())
                     if saved.get(key) != value)


def _load_state(work_dir: Path, config: OptimizeConfig) -> OptimizeState:
    path = work_dir / "state.json"
    if not path.exists():
        return OptimizeState(config_fingerprint=config.fingerprint())
    try:
        state = OptimizeState.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise ConfigError(f"the saved optimizer state is unreadable ({first['msg']}); restore it or choose a new --out",
                          source=str(path), field=".".join(map(str, first["loc"])) or None,
                          value=first.get("input") if first["loc"] else None) from None
    if state.config_fingerprint != config.fingerprint():
        changed = _differences(work_dir, config)
        raise ConfigError("this output directory was started with different settings"
                          + (f" ({changed})" if changed else "") + "; resume with the same options (method options "
                          "included) or choose a new --out", field="--out", value=str(work_dir.parent))
    return state


def _reconcile(state: OptimizeState, store: PolicyStore, work_dir: Path) -> None:
    """A crash after a commit / rejection but before state.json was written: count that iteration as done, and
    record truthfully what it decided (from the store and the iteration's gate.json)."""
    recovered: dict[int, IterationRecord] = {}
    for version in store.versions():
        memory = store.load(version)
        if memory.note.startswith("iteration "):
            try:
                iteration = int(memory.note.split()[1].rstrip(":"))
            except ValueError:
                continue
            recovered[iteration] = IterationRecord(iteration=iteration, accepted=True, version=version,
                                                   n_ops=memory.n_ops, note="recovered after a crash")
    for rejected in store.rejected():
        iteration = int(rejected.scores.get("iteration", 0))
        if iteration:
            recovered.setdefault(iteration, IterationRecord(iteration=iteration, n_ops=len(rejected.ops),
                                                            note="recovered after a crash"))
    for iteration in sorted(i for i in recovered if i > state.completed):
        record = recovered[iteration]
        gate = work_dir / f"iter-{iteration:04d}" / "gate.json"
        if gate.exists():
            record.gate = json.loads(gate.read_text(encoding="utf-8"))
        state.history.append(record)
        state.completed = iteration


def estimate(config: OptimizeConfig, benchmark, program) -> dict[str, Any]:
    """A rough, labeled estimate of LM calls for --dry-run (real numbers come from the ledger): the method's own
    estimate of an iteration (:mod:`nlgrad.methods.estimate`) times the iterations, plus the final test."""
    interactive = getattr(benchmark, "kind", "static") == "interactive"
    step_cap = step_cap_for(benchmark, config.step_cap)
    routes = max(1, len(program.routes))
    shape = RunShape(iterations=config.iterations, batch=config.batch, val=config.val, test_n=config.test_n,
                     routes=routes, calls_per_rollout=(step_cap or 20) / 2 if interactive else routes)
    per_iter, missing = iteration_calls(method_class(config.method), config.method_options, shape)
    total = {k: int(v * config.iterations) for k, v in per_iter.items()}
    total["agent (final test eval: initial + final)"] = int(shape.rollouts(2 * config.test_n))
    settings = {"method": config.method, "iterations": config.iterations, "batch": config.batch, "val": config.val,
                "test_n": config.test_n, "step_cap": step_cap if interactive else None,
                "method_options": config.method_options}
    note = "upper-bound estimate; cached calls cost nothing and the gate reuses cached current-policy runs"
    return {"calls": total, "total_calls": sum(total.values()), "settings": settings,
            "note": f"{note}; {missing}" if missing else note}


def run_optimize(config: OptimizeConfig, settings: Settings, out: Path, *, budget: Budget | None = None,
                 console: Console | None = None, progress: bool = True, dry_run: bool = False,
                 stop_after: int | None = None, gate: AcceptanceGate | None = None,
                 sampler: BatchSampler | None = None) -> OptimizeOutcome | dict[str, Any]:
    """Optimize ``config.method`` into ``out`` (resuming what is there). ``gate`` decides whether a candidate
    replaces the current policy (default: :class:`~nlgrad.methods.strategies.acceptance.PairedImprovementGate`
    from the config) and ``sampler`` picks each iteration's training batch (default: seeded by ``config.seed``),
    after GEPA's ``optimize(acceptance_criterion=..., batch_sampler=...)``."""
    console = console or Console(stderr=True)
    benchmark = load_benchmark(config.benchmark)
    program = load_program(config.program or benchmark.default_program, benchmark=benchmark)
    check_method_options(config.method, config.method_options)
    if dry_run:
        return estimate(config, benchmark, program)
    method = load_method(config.method, config.method_options)
    inject_weight_learner(method)
    # a method whose own model plays the agent (JERP with a trainer) does not use the agent role's model
    check_models(settings, ("critic", "optimizer") if getattr(method, "own_agent", False)
                 else ("agent", "critic", "optimizer"))
    _check_writable(out)
    with RunLock(out, field="--out"):  # one live writer per --out (a second is refused, naming the holder's pid)
        try:
            return _run_locked(config, settings, out, method, benchmark, program, budget=budget, console=console,
                               progress=progress, stop_after=stop_after, gate=gate, sampler=sampler)
        except KeyboardInterrupt as exc:
            raise Interrupted.of(exc, f"{_completed(out)} of {config.iterations} iterations are saved in {out}, "
                                      f"with the finished rollouts of the next") from exc


def inject_weight_learner(method) -> None:
    """A method that asks for the companion trainer's weights (``trainer_options`` set, e.g. JERP's ``trainer=``)
    gets the trainer's weight learner as its ``weight_learner``, built from those options (checked now, so a bad
    one fails before any work; the model is loaded in the method's ``setup``). The trainer is imported only here:
    it needs the optional extra ``train`` (torch)."""
    options = getattr(method, "trainer_options", None)
    if options is None or getattr(method, "weight_learner", None) is not None:
        return
    try:
        from nlgrad.trainer.weight_learner import TrainerWeightLearner
    except ImportError as exc:
        if exc.name not in ("torch", "transformers", "peft"):
            raise
        raise ConfigError(f"the companion trainer's weight learner needs the optional extra: pip install "
                          f"'nlgrad[train]' ({exc.name} is missing)", field="--method-option",
                          value="trainer") from None
    method.weight_learner = TrainerWeightLearner(options)


def _completed(out: Path) -> int:
    """Iterations the saved state of ``out`` counts as completed (0 when there is none yet)."""
    try:
        return int(json.loads((out / "run" / "state.json").read_text()).get("completed", 0))
    except (OSError, ValueError, AttributeError):
        return 0


def _run_locked(config: OptimizeConfig, settings: Settings, out: Path, method, benchmark, program, *,
                budget: Budget | None, console: Console, progress: bool, stop_after: int | None,
                gate: AcceptanceGate | None = None, sampler: BatchSampler | None = None) -> OptimizeOutcome:
    work_dir = out / "run"
    work_dir.mkdir(parents=True, exist_ok=True)
    resuming = (work_dir / "state.json").exists()
    state = _load_state(work_dir, config)  # before config.json is written: a mismatch leaves the saved one intact
    check_identity(work_dir, {"program": program.name, "roles": role_identity(settings, RESUME_ROLES)},
                   resuming=resuming, value=str(out))
    write_json_atomic(work_dir / "config.json", config.model_dump(mode="json"))
    store = PolicyStore(out)
    store.repair()
    if not store.versions():
        store.commit(_initial_memory(config, program), method="init", note="initial policy")
    _reconcile(state, store, work_dir)
    initial_version = store.versions()[0]
    journal = work_dir / "ledger.jsonl"
    if state.ledger and not journal.exists():  # a run started before the journal existed
        Ledger(journal=journal).merge(Ledger.from_dict(state.ledger))
    previous = Ledger.replay(journal)  # every call of earlier (possibly killed) processes, partial iterations too
    lm = LM(settings, ledger=Ledger(journal=journal))
    ws = Workspace(config=config, benchmark=benchmark, program=program, lm=lm, store=store, work_dir=work_dir,
                   gate=gate, sampler=sampler)
    if hasattr(method, "setup"):
        method.setup(ws)
    start = time.monotonic()

    def save_state() -> None:
        total = Ledger.from_dict(previous.to_dict())
        total.merge(lm.ledger)
        state.ledger = total.to_dict()
        write_json_atomic(work_dir / "state.json", state.model_dump(mode="json"))
        total.save(work_dir / "ledger.json")

    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[status]}"), TimeElapsedColumn()]
    with Progress(*columns, console=console, disable=not progress) as bar_ui:
        bar = bar_ui.add_task(f"{config.method} {config.benchmark}", total=config.iterations,
                              completed=state.completed, status="")
        while state.completed < config.iterations and not state.finished:
            if budget is not None:
                merged = Ledger.from_dict(previous.to_dict())
                merged.merge(lm.ledger)
                reason = budget.exceeded(merged, time.monotonic() - start)
                if reason:
                    state.stop_reason = reason
                    break
            if stop_after is not None and state.completed >= stop_after:
                break
            iteration = state.completed + 1
            memory = store.load()
            bar_ui.update(bar, status=f"iteration {iteration}: rollouts, critique, proposals")
            proposal = method.propose(ws, memory, iteration)
            record = IterationRecord(iteration=iteration, batch_mean=proposal.batch_mean,
                                     n_ops=len(proposal.ops), note=proposal.note)
            if proposal.candidate is not None:
                if proposal.gate_decision is not None:
                    decision = proposal.gate_decision.to_dict()
                else:
                    bar_ui.update(bar, status=f"iteration {iteration}: validation gate")
                    decision = _gate(ws, memory, proposal.candidate, iteration)
                record.gate = decision
                ws.write(iteration, "gate.json", decision)  # before the commit, so a crash after it can be explained
                scores = {"val": decision["candidate_mean"], "val_parent": decision["current_mean"],
                          "val_diff": decision["mean_diff"], "iteration": iteration}
                if decision["accept"]:
                    record.accepted = True
                    record.version = store.commit(proposal.candidate, method=config.method, scores=scores,
                                                  ops_count=len(proposal.ops),
                                                  note=f"iteration {iteration}: {decision['reason']}")
                else:
                    store.record_rejected(proposal.ops, decision["reason"], scores=scores, parent=memory.version)
            state.history.append(record)
            state.completed = iteration
            save_state()
            bar_ui.update(bar, completed=state.completed,
                          status=_status(record, lm.ledger))
    if state.completed >= config.iterations or state.stop_reason:
        state.finished = True
    save_state()
    final_version = store.latest() or initial_version
    test = None
    if state.finished and config.test_n > 0:
        test = final_test(ws, store, initial_version, final_version, console=console, progress=progress)
        write_json_atomic(work_dir / "final" / "test.json", test)
    save_state()
    return OptimizeOutcome(state, initial_version, final_version, test, Ledger.from_dict(state.ledger), work_dir,
                           ws.policy_for_task, store.load(final_version).n_entries())


def _gate(ws: Workspace, memory: PolicyMemory, candidate: PolicyMemory, iteration: int) -> dict[str, Any]:
    """The shared gate's decision on the validation tasks ``ws.validation_tasks`` selects for this candidate."""
    selector, tasks = ws.validation_tasks(memory, candidate)
    if not tasks:
        return GateDecision.self_selected(None, None, "the candidate changes no validation task's prompt", accept=False,
                                          validation=selector, validation_tasks=0).to_dict()
    current = ws.rollouts(tasks, memory, label=f"val-v{memory.version}", iteration=iteration, keep_traces=False)
    cand = ws.rollouts(tasks, candidate, label="val-candidate", iteration=iteration, keep_traces=False)
    decision = ws.gate.decide(cand.scores, current.scores).to_dict()
    return {**decision, "validation": selector, "validation_tasks": len(tasks)}


def _status(record: IterationRecord, ledger: Ledger) -> str:
    gate = record.gate or {}
    val = f"val {gate['candidate_mean']:.3f} vs {gate['current_mean']:.3f}" if gate else "no candidate"
    verdict = "accepted" if record.accepted else "rejected" if gate else "-"
    batch = f"batch {record.batch_mean:.3f}" if record.batch_mean is not None else ""
    total = ledger.total()
    return f"{batch} | {val} | {record.n_ops} ops {verdict} | {total.total_tokens} tok ${total.cost_usd:.3f}"


def final_test(ws: Workspace, store: PolicyStore, initial: int, final: int, *, console: Console,
               progress: bool) -> dict[str, Any]:
    """Evaluate the initial and the final version on the test split (never seen while optimizing)."""
    tasks = ws.benchmark.tasks("test", ws.config.test_n)
    out: dict[str, Any] = {"initial_version": initial, "final_version": final, "n": len(tasks)}
    for label, version in (("initial", initial), ("final", final)):
        run_dir = RunDir(ws.work_dir / "final" / f"test-v{version}").create()
        executor = ws.executor(store.load(version), run_dir=run_dir, label=f"test {label} v{version}",
                               progress=progress, console=console)
        result: RunResult = executor.run(tasks, resume=True)
        out[label] = {"version": version, **result.summary, "scores": result.scores}
    from nlgrad.stats import paired_difference

    out["paired_diff"] = paired_difference(out["final"]["scores"], out["initial"]["scores"]).to_dict()
    return out
