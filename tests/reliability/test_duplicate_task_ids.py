"""Two rows with one id in a benchmark's data (a user's own data file) would become two tasks with one task id:
results, traces and resume are keyed by it, so one trace silently overwrote the other (5 results, 4 traces). The
shared JSON-lines reader refuses the file when the benchmark loads it, naming the id, the file and both lines; the
executors refuse a task list in which one id names two different tasks, whatever benchmark built it, before any task
runs (a sampler that repeats the very same task still works: it runs once)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from reliability_helpers import toy_settings
from reliability_world import ToyBenchmark, ToyProgram

from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import SPLITS

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def _write_splits(root: Path, rows: dict[str, list[dict]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows.get(split, [])))
    return root


def _hotpot_row(row_id, question="Who?"):
    return {"id": row_id, "question": question, "answer": "x", "supporting_facts": [{"title": "A", "sent_id": 0}],
            "context": [{"title": "A", "sentences": ["x."]}]}


def _hover_row(row_id):
    return {"id": row_id, "claim": "A claim.", "label": "SUPPORTED", "supporting_facts": [{"title": "A"}]}


@pytest.mark.parametrize("first, second", [("q1", "q1"), (7, "7")])  # 7 and "7" give one task id
def test_hotpotqa_refuses_a_data_file_with_a_repeated_id(tmp_path, first, second):
    from nlgrad.benchmarks.hotpotqa import HotpotQABenchmark

    rows = [_hotpot_row(first), _hotpot_row("q2"), _hotpot_row(second, "Again?")]
    root = _write_splits(tmp_path / "mine", {"train": [_hotpot_row("t")], "dev": rows, "test": [_hotpot_row("s")]})
    with pytest.raises(BenchmarkError) as info:
        HotpotQABenchmark(data_dir=root).tasks("dev")
    message = str(info.value)
    assert str(root / "dev.jsonl") in message and repr(str(second)) in message
    assert "line 3" in message and "line 1" in message


def test_hover_refuses_a_data_file_with_a_repeated_id(tmp_path):
    from nlgrad.benchmarks.hover import HoverBenchmark

    root = _write_splits(tmp_path / "mine", {"train": [_hover_row("a"), _hover_row("b"), _hover_row("a")]})
    with pytest.raises(BenchmarkError, match=r"train\.jsonl line 3: .*'a'.*line 1"):
        HoverBenchmark("closedbook", data_dir=root).rows("dev")


def test_locomo_refuses_a_repeated_question_id(tmp_path):
    from nlgrad.benchmarks.locomo import LocomoBenchmark

    root = tmp_path / "locomo"
    root.mkdir()
    conversation = {"sample_id": "conv-1", "sessions": [{"session": 1, "date_time": "1:00 pm on 8 May, 2023",
                                                         "turns": [{"dia_id": "D1:1", "speaker": "A", "text": "hi"}]}]}
    (root / "conversations.jsonl").write_text(json.dumps(conversation) + "\n")
    qa = [{"sample_id": "conv-1", "qid": f"conv-1-q{i % 2}", "question": "Q?", "answer": "a", "evidence": [],
           "category": 1} for i in range(3)]
    (root / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qa))
    with pytest.raises(BenchmarkError, match=r"qa\.jsonl line 3: .*'conv-1-q0'.*line 1"):
        LocomoBenchmark(data_dir=root).questions("dev")


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs shared/data")
def test_the_shared_data_still_loads():
    from nlgrad.benchmarks.hotpotqa import HotpotQABenchmark
    from nlgrad.benchmarks.hover import HoverBenchmark

    for bench in (HotpotQABenchmark(data_dir=SHARED / "hotpotqa"),
                  HoverBenchmark("closedbook", data_dir=SHARED / "hover")):
        ids = [t.id for split in SPLITS for t in bench.tasks(split)]
        assert len(ids) == 600 == len(set(ids))


class _RepeatingBenchmark(ToyBenchmark):
    """A benchmark defined in Python (no data file) whose 5th task reuses the 2nd task's id."""

    def tasks(self, split, n=None):
        tasks = super().tasks(split, 5)
        return tasks[:4] + [replace(tasks[4], id=tasks[1].id)]


@pytest.mark.parametrize("executor_kind", ["thread", "ray"])
def test_executors_refuse_a_task_list_that_repeats_an_id(toy, server, tmp_path, executor_kind):
    from nlgrad.lm.client import LM
    from nlgrad.runtime.executor import Executor
    from nlgrad.runtime.rundir import RunDir

    bench = _RepeatingBenchmark()
    run = RunDir(tmp_path / "run").create()
    kwargs = dict(benchmark=bench, program=ToyProgram(), lm=LM(toy_settings(tmp_path, server.api_base)),
                  run_dir=run, progress=False)
    if executor_kind == "ray":
        pytest.importorskip("ray")
        from nlgrad.runtime.ray_executor import RayExecutor

        executor = RayExecutor(**kwargs)  # refused before a Ray instance is started
    else:
        executor = Executor(**kwargs)
    with pytest.raises(BenchmarkError) as info:
        executor.run(bench.tasks("dev"))
    message = str(info.value)
    assert "toy/dev/1" in message and "toy" in message and "tasks 2 and 5" in message
    assert server.stats.requests == 0
    assert not (run.path / "results.jsonl").exists() or not (run.path / "results.jsonl").read_text()


def test_a_repeated_identical_task_runs_once(toy, server, tmp_path):
    from nlgrad.lm.client import LM
    from nlgrad.runtime.executor import Executor
    from nlgrad.runtime.rundir import RunDir

    bench = ToyBenchmark()
    tasks = bench.tasks("dev", 3)
    run = RunDir(tmp_path / "run").create()
    result = Executor(benchmark=bench, program=ToyProgram(), lm=LM(toy_settings(tmp_path, server.api_base)),
                      run_dir=run, progress=False).run(tasks + [tasks[0]])
    assert [r.task_id for r in result.results] == [t.id for t in tasks + [tasks[0]]]
    assert len(run.load_results()) == 3 and len(list((run.path / "traces").iterdir())) == 3
    lines = (run.path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 3
