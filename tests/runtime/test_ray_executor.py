"""RayExecutor on a local Ray instance: same results as the thread executor, run dirs, ledgers, resume, errors.

LM calls go to a fake OpenAI-compatible server on 127.0.0.1 (started here), because Ray workers are other processes:
monkeypatching litellm in this process would not reach them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))

import fake_lm  # noqa: E402
import reliability_world as world  # noqa: E402

from nlgrad.config import RoleConfig, Settings  # noqa: E402
from nlgrad.errors import BenchmarkError, ConfigError  # noqa: E402
from nlgrad.lm.client import LM  # noqa: E402
from nlgrad.runtime.executor import Executor  # noqa: E402
from nlgrad.runtime.rundir import RunDir  # noqa: E402
from nlgrad.runtime.trace import Trace  # noqa: E402

ray = pytest.importorskip("ray")

from nlgrad.runtime.ray_executor import (RayExecutor, WorkerSpec, make_executor,  # noqa: E402
                                         resolve_node_placeholders)


@pytest.fixture(scope="module")
def ray_local():
    """One small local Ray instance for the module (starting Ray takes ~15 s on 2 cores)."""
    from ray import cloudpickle

    # Workers cannot import modules under tests/: ship the toy classes (and those defined here) by value.
    cloudpickle.register_pickle_by_value(fake_lm)
    cloudpickle.register_pickle_by_value(world)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(autouse=True)
def toy_key(monkeypatch):
    monkeypatch.setenv("NLGRAD_TOY_KEY", "sk-toy-not-secret")


@pytest.fixture
def server():
    with world.FakeOpenAIServer(reply=world.toy_reply) as srv:
        yield srv


def make_settings(tmp_path, api_base, name="cache", **role_kw) -> Settings:
    # An OpenAI-compatible server without auth still needs *a* key for litellm's openai provider (see the
    # reliability suite's test_no_auth_server_needs_no_key); the fake server accepts any.
    role_kw.setdefault("api_key_env", "NLGRAD_TOY_KEY")
    role = RoleConfig(model="openai/toy", api_base=api_base, max_tokens=32, timeout_s=5, **role_kw)
    return Settings(roles={"agent": role, "critic": role}, cache_dir=tmp_path / name, runs_dir=tmp_path / "runs",
                    retries=3, backoff_base_s=0.001, backoff_max_s=0.002)


class UpperPolicy:
    def render(self, route):
        return "Write the repeated text in UPPERCASE."


def _key(result):
    return (result.task_id, result.split, result.seed, result.score, result.success, result.feedback, result.error,
            result.steps, result.tokens, json.dumps(result.output, sort_keys=True))


def test_same_results_as_thread_executor(ray_local, server, tmp_path):
    bench, tasks = world.ToyBenchmark(), world.ToyBenchmark().tasks("dev", 6)
    thread_lm = LM(make_settings(tmp_path, server.api_base, "c1"))
    thread = Executor(benchmark=bench, program=world.ToyProgram(), lm=thread_lm, policy=UpperPolicy(), workers=1,
                      run_dir=RunDir(tmp_path / "thread").create(), progress=False).run(tasks)
    ray_lm = LM(make_settings(tmp_path, server.api_base, "c2"))
    executor = RayExecutor(benchmark=bench, program=world.ToyProgram(), lm=ray_lm, policy=UpperPolicy(), workers=3,
                           run_dir=RunDir(tmp_path / "ray").create(), progress=False, keep_traces=True)
    result = executor.run(tasks)
    assert [r.task_id for r in result.results] == [t.id for t in tasks]
    assert [_key(r) for r in result.results] == [_key(r) for r in thread.results]
    assert result.summary["score"]["mean"] == 1.0 == thread.summary["score"]["mean"]
    # traces came back and are complete graphs
    trace = result.traces[tasks[0].id]
    call = trace.module_calls("toy.say")[0]
    assert call["output"] == "WORD NUMBER 100" and "UPPERCASE" in call["policy"]
    # run dir written by the driver, exactly like the thread executor's
    lines = (tmp_path / "ray/results.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["task_id"] for x in lines) == sorted(t.id for t in tasks)
    for t in tasks:
        saved = Trace.load(RunDir(tmp_path / "ray").trace_path(t.id))
        reference = Trace.load(RunDir(tmp_path / "thread").trace_path(t.id))
        assert [(n["route"], n.get("messages"), n.get("output")) for n in saved.nodes()] == \
            [(n["route"], n.get("messages"), n.get("output")) for n in reference.nodes()]
    assert json.loads((tmp_path / "ray/summary.json").read_text())["n"] == 6
    # worker ledgers merged into the driver's LM ledger
    a, b = thread_lm.ledger.total(), ray_lm.ledger.total()
    assert (b.calls, b.prompt_tokens, b.completion_tokens, b.retries) == (a.calls, a.prompt_tokens,
                                                                           a.completion_tokens, a.retries) == \
        (6, a.prompt_tokens, a.completion_tokens, 0)
    assert executor.worker_pids and all(pid != __import__("os").getpid() for pid in executor.worker_pids)


def test_interactive_benchmark_by_reference_matches_threads(ray_local, server, tmp_path):
    """twx/coin rebuilt on the worker from its registry id; env per worker; same episodes as the thread executor."""
    pytest.importorskip("textworld_express")
    from nlgrad.runtime.registry import load_benchmark, load_program

    bench = load_benchmark("twx/coin")
    tasks = bench.tasks("dev", 2)
    outs = []
    for kind, name in (("thread", "t1"), ("ray", "t2")):
        lm = LM(make_settings(tmp_path, server.api_base, name))
        kwargs = dict(benchmark=bench, program=load_program("twx_react", benchmark=bench), lm=lm, workers=2,
                      step_cap=3, progress=False)
        ex = RayExecutor(ship="ref", **kwargs) if kind == "ray" else Executor(**kwargs)
        outs.append(ex.run(tasks))
    thread, viaray = outs
    assert [_key(r) for r in viaray.results] == [_key(r) for r in thread.results]
    assert all(r.error is None and 1 <= r.steps <= 3 for r in viaray.results)


def test_resume_runs_only_missing_tasks(ray_local, server, tmp_path):
    bench, tasks = world.ToyBenchmark(), world.ToyBenchmark().tasks("dev", 4)
    run_dir = RunDir(tmp_path / "run").create()
    lm = LM(make_settings(tmp_path, server.api_base))
    RayExecutor(benchmark=bench, program=world.ToyProgram(), lm=lm, workers=2, run_dir=run_dir,
                progress=False).run(tasks[:2])
    before = server.stats.requests
    lm2 = LM(make_settings(tmp_path, server.api_base).model_copy(update={"use_cache": False}))
    result = RayExecutor(benchmark=bench, program=world.ToyProgram(), lm=lm2, workers=2, run_dir=run_dir,
                         progress=False).run(tasks, resume=True)
    assert server.stats.requests - before == 2
    assert [r.task_id for r in result.results] == [t.id for t in tasks]
    assert len((tmp_path / "run/results.jsonl").read_text().splitlines()) == 4


def test_worker_side_failure_is_a_clear_error(ray_local, server, tmp_path):
    class Unknown(world.ToyBenchmark):
        id = "no-such-benchmark"

    lm = LM(make_settings(tmp_path, server.api_base))
    ex = RayExecutor(benchmark=Unknown(), program=world.ToyProgram(), lm=lm, ship="ref", progress=False)
    with pytest.raises(BenchmarkError, match="no-such-benchmark"):
        ex.run(world.ToyBenchmark().tasks("dev", 1))


def test_episode_errors_stay_results(ray_local, server, tmp_path):
    class Boom(world.ToyProgram):
        def run(self, task, ctx):
            if task.id.endswith("/1"):
                raise RuntimeError("boom")
            return super().run(task, ctx)

    lm = LM(make_settings(tmp_path, server.api_base))
    result = RayExecutor(benchmark=world.ToyBenchmark(), program=Boom(), lm=lm, workers=2,
                         progress=False).run(world.ToyBenchmark().tasks("dev", 3))
    assert [r.error for r in result.results] == [None, "RuntimeError: boom", None]


def test_api_key_is_forwarded_to_workers_but_never_written(ray_local, server, tmp_path, monkeypatch):
    secret = "sk-ray-forwarded-0123456789"
    monkeypatch.setenv("NLGRAD_TEST_RAY_KEY", secret)  # set after ray.init: workers only get it forwarded
    lm = LM(make_settings(tmp_path, server.api_base, api_key_env="NLGRAD_TEST_RAY_KEY"))
    run_dir = RunDir(tmp_path / "run").create()
    RayExecutor(benchmark=world.ToyBenchmark(), program=world.ToyProgram(), lm=lm, workers=2, run_dir=run_dir,
                progress=False).run(world.ToyBenchmark().tasks("dev", 2))
    assert server.stats.auth_headers[f"Bearer {secret}"] == 2
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_make_executor_kinds(ray_local, server, tmp_path):
    kw = dict(benchmark=world.ToyBenchmark(), program=world.ToyProgram(),
              lm=LM(make_settings(tmp_path, server.api_base)), progress=False)
    assert type(make_executor("thread", **kw)) is Executor
    assert isinstance(make_executor("ray", ray_address=None, **kw), RayExecutor)
    with pytest.raises(ConfigError, match="unknown executor"):
        make_executor("dask", **kw)


def test_node_ip_placeholder_and_spec_carry_no_live_objects(tmp_path):
    settings = make_settings(tmp_path, "http://{node_ip}:8000/v1")
    resolved = resolve_node_placeholders(settings, "10.0.0.7")
    assert resolved.role("agent").api_base == "http://10.0.0.7:8000/v1"
    assert settings.role("agent").api_base == "http://{node_ip}:8000/v1"
    spec = WorkerSpec(settings=settings.model_dump(mode="json"))
    assert json.loads(json.dumps(spec.settings))["roles"]["agent"]["model"] == "openai/toy"


def test_missing_ray_is_a_clear_config_error(server, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    kw = dict(benchmark=world.ToyBenchmark(), program=world.ToyProgram(),
              lm=LM(make_settings(tmp_path, server.api_base)), progress=False)
    with pytest.raises(ConfigError, match=r"nlgrad\[ray\]"):
        make_executor("ray", **kw)
    assert type(make_executor("thread", **kw)) is Executor  # the thread executor never needs Ray


def test_successive_runs_reuse_workers_but_use_each_runs_policy(ray_local, server, tmp_path):
    """As in optimize: many runs with the same benchmark/program/settings and changing policies."""
    bench, tasks = world.ToyBenchmark(), world.ToyBenchmark().tasks("dev", 2)
    lm = LM(make_settings(tmp_path, server.api_base))
    outputs = []
    for policy in (None, UpperPolicy(), None):
        ex = RayExecutor(benchmark=bench, program=world.ToyProgram(), lm=lm, policy=policy, workers=2,
                         progress=False)
        outputs.append([r.output for r in ex.run(tasks).results])
    assert outputs == [["word number 100", "word number 101"], ["WORD NUMBER 100", "WORD NUMBER 101"],
                       ["word number 100", "word number 101"]]
    assert lm.ledger.total().calls + lm.ledger.total().cached == 6


def test_policy_for_task_hook_travels_to_workers_for_that_run_only(ray_local, server, tmp_path):
    """The executor's per-task policy hook (JERP's retrieval) runs on the worker, once per task, and is not kept
    by the cached worker executor for the next run."""
    from nlgrad.runtime.rule_retrieval import Retriever
    from nlgrad.text.embeddings import LexicalEmbedder
    from nlgrad.policy import PolicyMemory

    memory = PolicyMemory.model_validate({"program": "toy", "routes": {"toy.say": [
        {"text": "When cooking a meal, read the recipe first.", "kind": "rule"},
        {"text": "When repeating a word number, write it in UPPERCASE.", "kind": "rule"}]}})
    bench, tasks = world.ToyBenchmark(), world.ToyBenchmark().tasks("dev", 3)
    lm = LM(make_settings(tmp_path, server.api_base))
    runs = []
    for hook in (Retriever(LexicalEmbedder(), k=1), None):
        ex = RayExecutor(benchmark=bench, program=world.ToyProgram(), lm=lm, policy=memory, workers=2,
                         progress=False, keep_traces=True, policy_for_task=hook)
        runs.append(ex.run(tasks))
    with_hook, without = runs
    assert [r.output for r in with_hook.results] == ["WORD NUMBER 100", "WORD NUMBER 101", "WORD NUMBER 102"]
    for t in tasks:
        trace = with_hook.traces[t.id]
        assert trace.graph.graph["jerp"]["retrieved"] == {"toy.say": ["toy.say#2"]}
        assert "cooking" not in trace.module_calls("toy.say")[0]["policy"]  # only the retrieved rule was shown
        assert "cooking" in without.traces[t.id].module_calls("toy.say")[0]["policy"]  # no hook: the whole pool
