"""End to end against the real embedded local model: one dev task of IFBench and of IFEval with if_follow.

Short on purpose (n=1, 48 output tokens): the point is that loading, prompting, the real LM, strict scoring and
feedback work together, not the score.
"""

from __future__ import annotations

import pytest
from local_server_check import require_local_server

from nlgrad.config import load_settings
from nlgrad.lm.client import LM
from nlgrad.programs.if_follow import ROUTE, InstructionFollowProgram
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.registry import load_benchmark

pytestmark = pytest.mark.local_model

require_local_server()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("benchmark_id,package", [("ifbench", "ifbench"), ("ifeval", "eval_framework")])
def test_one_dev_task_with_the_local_model(tmp_path, benchmark_id, package):
    pytest.importorskip(package)
    bench = load_benchmark(benchmark_id)
    program = InstructionFollowProgram(benchmark=bench, max_tokens=48)
    lm = LM(load_settings(cache_dir=tmp_path / "cache"))
    (task,) = bench.tasks("dev", 1)
    run = Executor(benchmark=bench, program=program, lm=lm, progress=False, keep_traces=True).run([task])
    (result,) = run.results
    assert result.error is None, result.error
    assert 0.0 <= result.score <= 1.0 and result.success == (result.score == 1.0)
    assert result.output["response"].strip() and 0 < result.output["completion_tokens"] <= 48
    assert result.output["max_tokens"] == 48
    assert f"of {len(task.gold['instruction_id_list'])} instructions (strict)" in result.feedback
    if not result.success:
        assert "violated: " in result.feedback
    (node,) = run.traces[task.id].nodes(kind="module", route=ROUTE)
    assert node["messages"][-1]["content"].strip() == task.inputs["prompt"].strip()
    assert lm.ledger.roles["agent"].calls == 1 and lm.ledger.roles["agent"].cached == 0
