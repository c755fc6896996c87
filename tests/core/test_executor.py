"""Executor: errors become results, workers give the same results, runs resume, run dirs are complete."""

import json

import pytest

from nlgrad.errors import ConfigError
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import MetricResult, Task
from nlgrad.runtime.rundir import RunDir

TEMPLATE = "{% block system %}Echo.{% endblock %}{% block user %}{{ text }}{% endblock %}"


class EchoBenchmark:
    id, kind, default_program = "echo", "static", "echo"

    def tasks(self, split, n=None):
        return [Task(id=f"echo/{i}", split=split, inputs={"text": f"item {i}"}, gold=f"item {i}") for i in range(n or 6)]

    def metric(self, task, output, episode=None):
        ok = output == task.gold
        return MetricResult(score=float(ok), success=ok, feedback="" if ok else f"expected {task.gold!r}")


class EchoProgram:
    name = "echo"
    routes = ["echo.say"]

    def __init__(self, fail_on=()):
        self.say = Module("echo.say", TEMPLATE)
        self.fail_on = set(fail_on)

    def run(self, task, ctx):
        if task.id in self.fail_on:
            raise RuntimeError("boom")
        return ctx.call(self.say, text=task.inputs["text"]).value


@pytest.fixture
def echo_llm(monkeypatch):
    """Mocked litellm that echoes the user message (deterministic regardless of thread order)."""
    import litellm

    real = litellm.completion

    def fake(*args, **kwargs):
        kwargs["mock_response"] = kwargs["messages"][-1]["content"]
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", fake)


def test_failing_task_is_an_error_result_not_a_crash(make_lm, echo_llm, tmp_path):
    run_dir = RunDir(tmp_path / "run").create()
    ex = Executor(benchmark=EchoBenchmark(), program=EchoProgram(fail_on={"echo/2"}), lm=make_lm(), workers=2,
                  run_dir=run_dir, progress=False)
    result = ex.run(EchoBenchmark().tasks("dev", 5))
    by_id = {r.task_id: r for r in result.results}
    assert by_id["echo/2"].error == "RuntimeError: boom" and by_id["echo/2"].score == 0.0
    assert all(r.score == 1.0 for tid, r in by_id.items() if tid != "echo/2")
    assert result.summary["n"] == 5 and result.summary["errors"] == 1
    assert result.summary["score"]["mean"] == pytest.approx(0.8)
    assert len((tmp_path / "run/results.jsonl").read_text().splitlines()) == 5
    assert len(list((tmp_path / "run/traces").glob("*.json"))) == 5
    assert json.loads((tmp_path / "run/summary.json").read_text())["n"] == 5


def test_results_do_not_depend_on_worker_count(make_lm, echo_llm, settings):
    tasks = EchoBenchmark().tasks("dev", 6)
    one = Executor(benchmark=EchoBenchmark(), program=EchoProgram(), lm=make_lm(), workers=1, progress=False).run(tasks)
    settings2 = settings.model_copy(update={"use_cache": False})
    three = Executor(benchmark=EchoBenchmark(), program=EchoProgram(), lm=make_lm(settings=settings2), workers=3,
                     progress=False).run(tasks)
    assert [r.task_id for r in one.results] == [t.id for t in tasks]
    assert [(r.task_id, r.score, r.output) for r in one.results] == [(r.task_id, r.score, r.output)
                                                                      for r in three.results]


def test_resume_skips_finished_tasks_and_tolerates_torn_line(make_lm, echo_llm, tmp_path):
    run_dir = RunDir(tmp_path / "run").create()
    tasks = EchoBenchmark().tasks("dev", 4)
    Executor(benchmark=EchoBenchmark(), program=EchoProgram(), lm=make_lm(), run_dir=run_dir,
             progress=False).run(tasks[:2])
    with open(tmp_path / "run/results.jsonl", "a") as fh:
        fh.write('{"task_id": "echo/2", "sco')  # crash mid-write
    calls = []
    program = EchoProgram()
    original = program.run
    program.run = lambda task, ctx: calls.append(task.id) or original(task, ctx)
    result = Executor(benchmark=EchoBenchmark(), program=program, lm=make_lm(), run_dir=run_dir,
                      progress=False).run(tasks, resume=True)
    assert calls == ["echo/2", "echo/3"] or sorted(calls) == ["echo/2", "echo/3"]
    assert [r.task_id for r in result.results] == [t.id for t in tasks]


def test_timeout_makes_an_error_result(make_lm, echo_llm):
    ex = Executor(benchmark=EchoBenchmark(), program=EchoProgram(), lm=make_lm(), timeout_s=1e-9, progress=False)
    result = ex.run(EchoBenchmark().tasks("dev", 1))
    assert "TaskTimeout" in result.results[0].error


def test_unwritable_run_dir_fails_before_work(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="run directory"):
        RunDir(blocker / "run").create()


class TwoCallProgram(EchoProgram):
    """Two module calls per task: the policy must stay the same object for the whole episode."""

    def run(self, task, ctx):
        first = ctx.call(self.say, text=task.inputs["text"]).value
        return ctx.call(self.say, text=first).value


class Lessons:
    def __init__(self, text):
        self.text, self.renders = text, 0

    def render(self, route):
        self.renders += 1
        return self.text


def test_policy_for_task_hook_is_called_once_per_task_and_fixed_for_the_episode(make_lm, echo_llm, tmp_path):
    base, calls, given = Lessons("base"), [], {}

    def hook(task, ctx):
        calls.append(task.id)
        assert ctx.policy is base and ctx.task is task and ctx.trace.task_id == task.id
        given[task.id] = Lessons(f"for {task.id}")
        return given[task.id]

    tasks = EchoBenchmark().tasks("dev", 4)
    ex = Executor(benchmark=EchoBenchmark(), program=TwoCallProgram(), lm=make_lm(), policy=base, workers=2,
                  progress=False, keep_traces=True, policy_for_task=hook, run_dir=RunDir(tmp_path / "r").create())
    result = ex.run(tasks)
    assert sorted(calls) == [t.id for t in tasks] and base.renders == 0
    for task in tasks:
        modules = [n for n in result.traces[task.id].nodes() if n["kind"] == "module"]
        assert [n["policy"] for n in modules] == [f"for {task.id}"] * 2 and given[task.id].renders == 2
    assert ex.run(tasks, resume=True).summary["n"] == 4 and len(calls) == 4  # finished tasks are not re-run

    def broken(task, ctx):
        raise KeyError("no rules")

    failed = Executor(benchmark=EchoBenchmark(), program=EchoProgram(), lm=make_lm(), policy=base, progress=False,
                      policy_for_task=broken).run(tasks[:1])
    assert failed.results[0].error == "KeyError: 'no rules'"  # a failing hook is that task's error, not a crash
