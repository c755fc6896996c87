"""End to end against the real embedded model: one task per QA benchmark family through the Executor (short)."""

import pytest
from local_server_check import require_local_server

from nlgrad.config import load_settings
from nlgrad.lm.client import LM
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.registry import load_benchmark, load_program

pytestmark = pytest.mark.local_model

require_local_server()

CASES = [
    ("hotpotqa", ["hotpot.hop1_query", "hotpot.hop2_query", "hotpot.answer"], ["retrieve", "retrieve"]),
    ("hover", ["hover.query", "hover.verify"], ["retrieve"]),
    ("locomo", ["locomo.answer"], ["retrieve"]),
]


@pytest.mark.parametrize("benchmark_id, routes, tools", CASES, ids=[c[0] for c in CASES])
def test_one_task_runs_with_the_local_model(tmp_path, benchmark_id, routes, tools):
    bench = load_benchmark(benchmark_id)
    program = load_program(bench.default_program, benchmark=bench)
    lm = LM(load_settings(cache_dir=tmp_path / "cache"))
    result = Executor(benchmark=bench, program=program, lm=lm, progress=False, keep_traces=True,
                      timeout_s=600).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None, r.error
    assert 0.0 <= r.score <= 1.0 and r.feedback and r.tokens > 0
    trace = result.traces[r.task_id]
    assert [n["route"] for n in trace.nodes(kind="module")] == routes
    assert [n["route"] for n in trace.nodes(kind="tool")] == tools
    assert all(n.get("output") is not None and n.get("completion_tokens", 0) > 0
               for n in trace.nodes(kind="module"))
    assert lm.ledger.total().total_tokens > 0
