"""Run episodes as Ray tasks: the same interface and results as :class:`~nlgrad.runtime.executor.Executor`.

The driver keeps the run directory, the progress bar and the LM ledger. Each Ray task rebuilds what an episode needs
on its worker (benchmark, program, LM from serializable :class:`~nlgrad.config.Settings`, the policy), calls
:meth:`Executor.run_task`, and returns the task result, the trace as JSON and the worker's ledger for that task. The
driver writes results and traces exactly as the thread executor does (so ``resume`` works the same) and merges the
ledgers. At most ``workers`` tasks are in flight, so ``--workers`` means the same thing for both executors.

What travels to a worker (a :class:`WorkerSpec`, put in the object store once per run):
- the benchmark and program *by value* (cloudpickle) when they pickle, else *by reference* (registry id / program
  name, rebuilt with :func:`~nlgrad.runtime.registry.load_benchmark` on the worker; data must then exist there);
- the settings as JSON and extra litellm kwargs; never a live LM, cache or lock;
- the values of the env vars named by ``api_key_env`` (a Ray worker may not share the driver's environment), put in
  the object store once per run and passed by reference (never a plain task argument, which Ray keeps in the task
  spec); they stay in memory: never written into the spec's JSON, a trace, a run dir or a log. The worker redacts
  them (:mod:`nlgrad.redact`) from error texts and from every log record, so Ray's worker logs never see them.
Workers keep what they built in a small per-process cache keyed by the spec's content hash, so a worker builds the
benchmark, program and LM once per run configuration, not once per task.

An ``api_base`` containing ``{node_ip}`` is resolved on each worker to its node's IP address, so a cluster with one
model server per GPU node sends every episode to the server on its own node (see docs/scale-out.md).

LM calls go wherever each role's model string points (a vLLM / SGLang / llama.cpp server, a hosted API); for
``local/...`` models the driver starts (or finds) the local server before fanning out, and workers on the same
machine reuse it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

from nlgrad.config import Settings
from nlgrad.errors import ConfigError, NlgradError
from nlgrad.lm.client import LM, LOCAL_PREFIX
from nlgrad.lm.ledger import Ledger
from nlgrad.redact import redact
from nlgrad.redact import register as register_secret
from nlgrad.runtime.executor import Executor, RunResult, TaskResult, _fmt_mean
from nlgrad.runtime.protocols import Task, distinct_tasks, step_cap_for
from nlgrad.runtime.trace import Trace

EXECUTOR_KINDS = ("thread", "ray")
NODE_IP_PLACEHOLDER = "{node_ip}"
_WORKER_CACHE_SIZE = 4
_WORKER_CACHE: "OrderedDict[str, _WorkerState]" = OrderedDict()
_REMOTE = None

log = logging.getLogger(__name__)


class RayWorkerError(NlgradError):
    """A Ray task failed outside the episode (the worker could not rebuild the benchmark, program or LM, or died)."""


# ------------------------------------------------------------------------------------------------ factory
def make_executor(kind: str = "thread", *, ray_address: str | None = None, ray_options: dict[str, Any] | None = None,
                  **executor_kwargs: Any) -> Executor:
    """``thread`` -> :class:`Executor`; ``ray`` -> :class:`RayExecutor` (``ray_address``: None = local instance,
    unless ``RAY_ADDRESS`` is set). Both take the same keyword arguments as :class:`Executor`."""
    if kind == "thread":
        return Executor(**executor_kwargs)
    if kind == "ray":
        return RayExecutor(address=ray_address, **(ray_options or {}), **executor_kwargs)
    raise ConfigError(f"unknown executor; known: {', '.join(EXECUTOR_KINDS)}", field="--executor", value=kind)


class ExecutorSettings(Protocol):
    """What :func:`executor_for` reads of a run's settings (an ``OptimizeConfig``, for one)."""

    executor: str
    ray_address: str | None
    workers: int | None
    step_cap: int | None


def executor_for(config: ExecutorSettings | None, *, benchmark, program, lm, policy=None, run_dir=None, label: str,
                 policy_for_task=None, keep_traces: bool = False, progress: bool = False, console=None,
                 workers: int | None = None, step_cap: int | None = None) -> Executor:
    """The one construction of a run's executor: an optimize run's (its rollouts, its test evaluation, and
    ``nlgrad compare``'s test of a run's final policy) and the companion trainer's (its rollouts and evaluations).

    ``config``'s kind (thread or Ray), workers and requested step cap; ``workers`` / ``step_cap``, where given, take
    the place of config's. Without a config (the trainer, whose LM is a model in this process) it is a thread
    executor with ``workers`` (default 1). The step cap is :func:`~nlgrad.runtime.protocols.step_cap_for` (the
    benchmark's default where none is requested)."""
    kind, ray_address = (config.executor, config.ray_address) if config is not None else ("thread", None)
    if workers is None:
        workers = config.workers if config is not None else 1
    if step_cap is None and config is not None:
        step_cap = config.step_cap
    return make_executor(kind, ray_address=ray_address, benchmark=benchmark, program=program, lm=lm, policy=policy,
                         workers=workers, step_cap=step_cap_for(benchmark, step_cap), run_dir=run_dir,
                         progress=progress, console=console, keep_traces=keep_traces, label=label,
                         policy_for_task=policy_for_task)


def import_ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("the Ray executor needs Ray: pip install 'nlgrad[ray]'", field="--executor",
                          value="ray") from None
    return ray


def ensure_ray(address: str | None = None, *, num_cpus: int | None = None) -> None:
    """Connect to the cluster at ``address`` (or ``RAY_ADDRESS``), else start a small local instance. Idempotent."""
    ray = import_ray()
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING,
                              "configure_logging": True}
    if address or os.environ.get("RAY_ADDRESS"):
        kwargs["address"] = address or os.environ["RAY_ADDRESS"]
    else:
        kwargs["num_cpus"] = max(1, num_cpus or 1)
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot start or reach the Ray cluster: {exc}", field="--ray-address",
                          value=kwargs.get("address", "local")) from None


def resolve_node_placeholders(settings: Settings, node_ip: str) -> Settings:
    """A copy of ``settings`` where ``{node_ip}`` in any role's ``api_base`` is replaced by ``node_ip``."""
    roles = dict(settings.roles)
    changed = False
    for name, role in settings.roles.items():
        if role.api_base and NODE_IP_PLACEHOLDER in role.api_base:
            roles[name] = role.model_copy(update={"api_base": role.api_base.replace(NODE_IP_PLACEHOLDER, node_ip)})
            changed = True
    return settings.model_copy(update={"roles": roles}) if changed else settings


# ------------------------------------------------------------------------------------------------ what travels
@dataclass
class WorkerSpec:
    """Everything a worker needs to rebuild an episode runner. Picklable; holds no live LM, cache or lock."""

    settings: dict[str, Any]
    litellm_kwargs: dict[str, Any] = field(default_factory=dict)
    benchmark: Any = None  # by value, or None when by reference
    benchmark_id: str | None = None
    program: Any = None
    program_name: str | None = None
    step_cap: int | None = None
    timeout_s: float | None = None

    def token(self, pickled: bytes) -> str:
        return hashlib.sha256(pickled).hexdigest()[:24]


@dataclass
class _WorkerState:
    executor: Executor
    lm: LM


def _build_state(spec: WorkerSpec, node_ip: str) -> _WorkerState:
    from nlgrad.runtime.registry import load_benchmark, load_program

    settings = resolve_node_placeholders(Settings.model_validate(spec.settings), node_ip)
    benchmark = spec.benchmark if spec.benchmark is not None else load_benchmark(spec.benchmark_id)
    program = spec.program if spec.program is not None else load_program(spec.program_name, benchmark=benchmark)
    lm = LM(settings, litellm_kwargs=spec.litellm_kwargs)
    executor = Executor(benchmark=benchmark, program=program, lm=lm, workers=1, step_cap=spec.step_cap,
                        timeout_s=spec.timeout_s, progress=False)
    return _WorkerState(executor=executor, lm=lm)


def _worker_state(token: str, spec_box: list) -> _WorkerState:
    state = _WORKER_CACHE.get(token)
    if state is not None:
        _WORKER_CACHE.move_to_end(token)
        return state
    import ray
    from ray import cloudpickle

    spec: WorkerSpec = cloudpickle.loads(ray.get(spec_box[0]))
    state = _build_state(spec, ray.util.get_node_ip_address())
    _WORKER_CACHE[token] = state
    while len(_WORKER_CACHE) > _WORKER_CACHE_SIZE:
        _, old = _WORKER_CACHE.popitem(last=False)
        old.executor._close_envs()
    return state


def run_remote_task(token: str, spec_box: list, policy: Any, task: Task, secrets_box: list,
                    policy_for_task: Any = None) -> dict[str, Any]:
    """The body of one Ray task: run one episode on this worker and return plain data for the driver.
    ``secrets_box``: ``[ObjectRef of {env var name: key}]`` (or ``[]``), fetched here, never a plain argument."""
    if secrets_box:
        import ray

        secrets: dict[str, str] = ray.get(secrets_box[0])
        register_secret(*secrets.values())  # redacted from this worker's errors and logs from here on
        for name, value in secrets.items():
            os.environ[name] = value
    state = _worker_state(token, spec_box)
    state.lm.ledger = Ledger()  # one ledger per task; the driver merges them
    state.executor.policy = policy
    state.executor.policy_for_task = policy_for_task  # the executor's per-task policy hook travels like the policy
    result, trace = state.executor.run_task(task)
    return {"result": result.to_dict(), "trace": trace.to_dict(), "ledger": state.lm.ledger.to_dict(),
            "worker": {"pid": os.getpid()}}


def _remote_function():
    global _REMOTE
    if _REMOTE is None:
        ray = import_ray()
        _REMOTE = ray.remote(max_retries=2)(run_remote_task)
    return _REMOTE


# ------------------------------------------------------------------------------------------------ the executor
class RayExecutor(Executor):
    """Same constructor and ``run(tasks, resume=False) -> RunResult`` as :class:`Executor`, plus:

    ``address``: Ray cluster address (None: ``RAY_ADDRESS`` or a local instance with ``workers`` CPUs);
    ``ship``: "auto" (benchmark/program by value when they pickle, else by reference), "value" or "ref";
    ``task_options``: passed to ``.options()`` of each Ray task (e.g. ``{"num_cpus": 0.5}``, a scheduling strategy);
    ``forward_secrets``: send the values of the ``api_key_env`` variables to workers (in memory only).
    """

    def __init__(self, *, address: str | None = None, ship: str = "auto", task_options: dict[str, Any] | None = None,
                 forward_secrets: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        if ship not in ("auto", "value", "ref"):
            raise ConfigError("ship must be auto, value or ref", field="ship", value=ship)
        import_ray()  # fail before any work when Ray is missing
        self.address, self.ship, self.forward_secrets = address, ship, forward_secrets
        self.task_options = {"num_cpus": 1, **(task_options or {})}
        self.worker_pids: set[int] = set()

    # ---- what the workers get ---------------------------------------------------------------------------------
    def _spec_bytes(self) -> bytes:
        from ray import cloudpickle

        spec = WorkerSpec(settings=self.lm.settings.model_dump(mode="json"),
                          litellm_kwargs=dict(self.lm._litellm_kwargs), step_cap=self.step_cap,
                          timeout_s=self.timeout_s)
        if self.ship in ("auto", "value"):
            try:
                by_value = WorkerSpec(**{**spec.__dict__, "benchmark": self.benchmark, "program": self.program})
                return cloudpickle.dumps(by_value)
            except Exception as exc:  # noqa: BLE001 - unpicklable objects fall back to registry references
                if self.ship == "value":
                    raise ConfigError(f"the benchmark or program cannot be sent to Ray workers by value: {exc}",
                                      field="ship", value="value") from None
                log.info("shipping benchmark/program by reference: %s", exc)
        spec.benchmark_id = getattr(self.benchmark, "id", None)
        spec.program_name = getattr(self.program, "name", None)
        if not spec.benchmark_id or not spec.program_name:
            raise ConfigError("a benchmark id and a program name are needed to rebuild them on Ray workers",
                              field="benchmark", value=spec.benchmark_id)
        return cloudpickle.dumps(spec)

    def _secrets(self) -> dict[str, str]:
        if not self.forward_secrets:
            return {}
        names = {role.api_key_env for role in self.lm.settings.roles.values() if role.api_key_env}
        return {name: os.environ[name] for name in sorted(names) if os.environ.get(name)}

    def _prestart_local_servers(self) -> None:
        """Start (or find) the local model server for the agent role here, so workers on this node reuse it."""
        try:
            cfg = self.lm.settings.role("agent")
        except ConfigError:
            return
        if cfg.model.startswith(LOCAL_PREFIX):
            self.lm.servers.ensure(cfg.model[len(LOCAL_PREFIX):])

    # ---- many tasks -------------------------------------------------------------------------------------------
    def run(self, tasks: list[Task], *, resume: bool = False) -> RunResult:
        ray = import_ray()
        done: dict[str, dict[str, Any]] = self.run_dir.load_results() if (resume and self.run_dir) else {}
        unique = distinct_tasks(tasks, self.source)  # a repeated id must name one task; it runs once
        todo = [t for t in unique if t.id not in done]
        results: dict[str, TaskResult] = {tid: TaskResult(**rec) for tid, rec in done.items()}
        traces: dict[str, Trace] = {}
        start = time.monotonic()
        if todo:
            ensure_ray(self.address, num_cpus=self.workers)
            self._prestart_local_servers()
            spec_bytes = self._spec_bytes()
            token = WorkerSpec(settings={}).token(spec_bytes)
            spec_box = [ray.put(spec_bytes)]  # nested in a list: workers fetch it only on a cache miss
            policy_ref = ray.put(self.policy)
            hook_ref = ray.put(self.policy_for_task)
            secrets = self._secrets()
            secrets_box = [ray.put(secrets)] if secrets else []  # by reference: not in any task spec
            remote = _remote_function().options(**self.task_options)
        progress = self._progress_bar()
        pending: dict[Any, Task] = {}
        queue = list(todo)
        try:
            with progress:
                bar = progress.add_task(self.label, total=len(unique), completed=len(unique) - len(todo),
                                        score=_fmt_mean(list(results.values())), tokens=0)
                while queue or pending:
                    while queue and len(pending) < self.workers:
                        task = queue.pop(0)
                        pending[remote.remote(token, spec_box, policy_ref, task, secrets_box, hook_ref)] = task
                    ready, _ = ray.wait(list(pending), num_returns=1)
                    for ref in ready:
                        task = pending.pop(ref)
                        payload = self._fetch(ray, ref, task)
                        result = TaskResult(**payload["result"])
                        trace = Trace.from_dict(payload["trace"], source=f"ray task {task.id}")
                        self.lm.ledger.merge(Ledger.from_dict(payload["ledger"]))
                        self.worker_pids.add(payload["worker"]["pid"])
                        self._record(result, trace, results, traces, progress, bar)
        finally:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - cancelling is best effort
                    pass
        return self._finish(tasks, results, traces, start)

    @staticmethod
    def _fetch(ray, ref, task: Task) -> dict[str, Any]:
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            if isinstance(cause, NlgradError):
                raise cause from None
            hint = ""
            if "No module named" in str(cause):
                hint = (" | hint: classes of the benchmark, program and policy must be importable on every Ray node "
                        "(install the package there) or registered with ray.cloudpickle.register_pickle_by_value")
            message = f"Ray worker failed on task {task.id}: {type(cause).__name__}: {cause}{hint}"
            raise RayWorkerError(redact(message)) from None
        except ray.exceptions.RayError as exc:
            raise RayWorkerError(redact(f"Ray could not run task {task.id}: {type(exc).__name__}: {exc}")) from None
