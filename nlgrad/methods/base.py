"""What every method shares: its config, the workspace it runs in (store, run dir, LM, rollouts), and its contract.

A method implements :class:`Method.propose`: given the current policy and an iteration number, roll out, read what
went wrong, and return a candidate policy (or None). The loop in :mod:`nlgrad.optimize` gates, commits or rejects
it, keeps state for resume, and enforces budgets. The test split is never used here: :meth:`Workspace.rollouts`
refuses test tasks (the runtime's :func:`~nlgrad.runtime.split_guard.guard_not_test`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from nlgrad.errors import NlgradError
from nlgrad.files import write_json_atomic
from nlgrad.lm.client import LM
from nlgrad.methods.strategies.acceptance import AcceptanceGate, GateDecision, PairedImprovementGate
from nlgrad.methods.strategies.validation import SELECTORS, ValidationTasks
from nlgrad.policy import PolicyBounds, PolicyMemory, PolicyStore, UpdateReport
from nlgrad.runtime.executor import Executor, PolicyForTask, RunResult
from nlgrad.runtime.protocols import Task, step_cap_for
from nlgrad.runtime.ray_executor import executor_for
from nlgrad.runtime.rundir import RunDir
from nlgrad.runtime.sampler import BatchSampler, SeededMinibatchSampler
from nlgrad.runtime.split_guard import guard_not_test


class OptimizeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: str = "nlpg"
    benchmark: str
    program: str | None = None
    iterations: int = Field(default=4, ge=1)
    batch: int = Field(default=6, ge=1)
    val: int = Field(default=30, ge=1)  # >= AUTO_CI_MIN_TASKS: the gate's CI requirement is on
    test_n: int = Field(default=20, ge=0)
    seed: int = 0
    workers: int | None = Field(default=None, ge=1)  # None: the agent model's parallelism
    step_cap: int | None = Field(default=None, ge=1)
    margin: float = Field(default=0.02, ge=0.0)
    gate_min_wins: int = Field(default=2, ge=1)
    gate_require_ci: bool | None = None  # None: required from AUTO_CI_MIN_TASKS paired tasks
    gate_validation: Literal["first", "reach"] = "first"  # which dev tasks the gate scores (strategies/validation)
    bounds: PolicyBounds = Field(default_factory=PolicyBounds)
    init_policy: str | None = None
    method_options: dict[str, Any] = Field(default_factory=dict)
    executor: Literal["thread", "ray"] = "thread"
    ray_address: str | None = None

    def resume_settings(self) -> dict[str, Any]:
        """What must match for a resume: everything (method options included) except test-time-only settings and
        where / how many workers run the episodes."""
        exclude = {"test_n", "workers", "executor", "ray_address"}
        if self.gate_validation == "first":  # the default: runs started before the option existed still resume
            exclude.add("gate_validation")
        return self.model_dump(mode="json", exclude=exclude)

    def fingerprint(self) -> str:
        data = self.resume_settings()
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


class IterationRecord(BaseModel):
    iteration: int
    batch_mean: float | None = None
    n_ops: int = 0
    accepted: bool = False
    version: int | None = None
    gate: dict[str, Any] = Field(default_factory=dict)
    note: str = ""


class OptimizeState(BaseModel):
    config_fingerprint: str
    completed: int = 0
    history: list[IterationRecord] = Field(default_factory=list)
    ledger: dict[str, Any] = Field(default_factory=dict)
    stop_reason: str | None = None
    finished: bool = False


@dataclass
class Proposal:
    """A method's output for one iteration: a candidate policy and how it was derived."""

    candidate: PolicyMemory | None
    ops: list[Any] = field(default_factory=list)
    report: UpdateReport | None = None
    batch_mean: float | None = None
    note: str = ""
    # Set by a method that decided itself (its own paired A/B test, a library's own selection): the loop commits
    # or rejects by it and does not run the shared gate.
    gate_decision: GateDecision | None = None


class Method(Protocol):
    """Contract: ``propose(ws, memory, iteration)`` rolls out on train tasks from ``ws.train_tasks``, may call LMs
    through ``ws.lm`` and writes what it learned under ``ws.iteration_dir(iteration)``; it returns a Proposal whose
    candidate was produced by :func:`nlgrad.policy.apply_update` (deterministic code), never edited by an LM. The
    shared loop gates the candidate with ``ws.gate`` unless the proposal carries its own ``gate_decision``.

    Optional: ``setup(ws)``, called once per process before the first iteration (and on resume, even when every
    iteration is done), e.g. to set ``ws.policy_for_task`` (the executor's per-task policy hook), which then applies
    to the method's rollouts, the shared validation gate and the final test alike. ``trainer_options`` (not None:
    the method asks for the companion trainer's weights): the run injects the trainer's weight learner, built from
    those options, as the method's ``weight_learner`` before ``setup`` (:func:`nlgrad.optimize.inject_weight_learner`)."""

    name: str

    def propose(self, ws: "Workspace", memory: PolicyMemory, iteration: int) -> Proposal: ...


class Workspace:
    """What a method runs in: the run's config, benchmark, program, LM, policy store and run directory, the batch
    ``sampler`` (default: seeded by ``config.seed``) and the acceptance ``gate`` (default: the paired gate with
    ``config.margin`` / ``gate_min_wins`` / ``gate_require_ci``). Both are swappable through
    :func:`nlgrad.optimize.run_optimize`."""

    def __init__(self, *, config: OptimizeConfig, benchmark, program, lm: LM, store: PolicyStore, work_dir: Path,
                 gate: AcceptanceGate | None = None, sampler: BatchSampler | None = None):
        self.config, self.benchmark, self.program, self.lm = config, benchmark, program, lm
        self.store, self.work_dir = store, work_dir
        self.policy_for_task: PolicyForTask | None = None  # the executor's per-task policy hook (see Method.setup)
        self.step_cap = step_cap_for(benchmark, config.step_cap)
        self.sampler: BatchSampler = sampler if sampler is not None else SeededMinibatchSampler(config.seed)
        self.gate: AcceptanceGate = gate if gate is not None else PairedImprovementGate.from_config(config)
        self.train_tasks = guard_not_test(benchmark.tasks("train"))
        self.val_tasks = guard_not_test(benchmark.tasks("dev", config.val))
        self.validation: ValidationTasks = SELECTORS[config.gate_validation]()

    @cached_property
    def dev_tasks(self) -> list[Task]:
        """The whole dev split (the ``reach`` validation selector draws from it)."""
        return guard_not_test(self.benchmark.tasks("dev"))

    def validation_tasks(self, current: PolicyMemory, candidate: PolicyMemory) -> tuple[str, list[Task]]:
        """The selector's name and the dev tasks the shared gate scores ``candidate`` and ``current`` on
        (``self.validation`` selects them). A method that gives each task its own view of the policy
        (``policy_for_task``: JERP's retrieval) gets the first ``--val``: reach would need that view."""
        if self.policy_for_task is not None:
            return "first", self.val_tasks
        return self.validation.name, self.validation.select(
            current, candidate, first=self.val_tasks, dev=lambda: self.dev_tasks, routes=list(self.program.routes),
            limit=self.config.val)

    def iteration_dir(self, iteration: int) -> Path:
        path = self.work_dir / f"iter-{iteration:04d}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write(self, iteration: int, name: str, data: Any) -> None:
        write_json_atomic(self.iteration_dir(iteration) / name, data)

    def executor(self, policy: PolicyMemory | None, *, run_dir: RunDir, label: str, keep_traces: bool = False,
                 progress: bool = False, console=None) -> Executor:
        """The executor of this run's rollouts and test evaluations (:func:`executor_for` the run's config), with the
        workspace's benchmark, program, LM and per-task policy hook, and ``policy``."""
        return executor_for(self.config, benchmark=self.benchmark, program=self.program, lm=self.lm, policy=policy,
                            run_dir=run_dir, label=label, policy_for_task=self.policy_for_task,
                            keep_traces=keep_traces, progress=progress, console=console)

    def rollouts(self, tasks: list[Task], memory: PolicyMemory | None, *, label: str, iteration: int,
                 keep_traces: bool = True) -> RunResult:
        guard_not_test(tasks)
        run_dir = RunDir(self.iteration_dir(iteration) / label).create()
        result = self.executor(memory, run_dir=run_dir, label=label, keep_traces=keep_traces).run(tasks, resume=True)
        errors = [r.error for r in result.results if r.error]
        if result.results and len(errors) == len(result.results):
            raise NlgradError(f"every {label} rollout failed, e.g.: {errors[0]} (see {run_dir.path})")
        if keep_traces and len(result.traces) < len(result.results):  # resumed: reload traces from disk
            from nlgrad.runtime.trace import Trace

            for r in result.results:
                if r.task_id not in result.traces and run_dir.trace_path(r.task_id).exists():
                    result.traces[r.task_id] = Trace.load(run_dir.trace_path(r.task_id))
        return result

