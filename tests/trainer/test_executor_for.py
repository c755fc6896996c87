"""The trainer builds its executors with the shared ``executor_for`` and the shared step-cap fallback."""

from nlgrad.methods.base import OptimizeConfig
from nlgrad.runtime.ray_executor import executor_for
from nlgrad.runtime.executor import Executor
from nlgrad.trainer.env_states import RecordingBenchmark, StateLog


class CappedBenchmark:
    id = "fake/capped"
    kind = "interactive"
    default_program = "none"
    default_step_cap = 7


def build(config=None, benchmark=None, **kwargs) -> Executor:
    return executor_for(config, benchmark=benchmark or CappedBenchmark(), program=object(), lm=object(),
                        label="train", **kwargs)


def test_without_a_config_it_is_one_thread_and_the_benchmarks_step_cap():
    executor = build()
    assert type(executor) is Executor and executor.workers == 1 and executor.step_cap == 7
    assert build(step_cap=3, workers=2).step_cap == 3 and build(workers=2).workers == 2
    # the trainer's recording wrapper passes the benchmark's hints through
    assert build(benchmark=RecordingBenchmark(CappedBenchmark(), StateLog())).step_cap == 7


def test_with_a_config_its_values_unless_given():
    config = OptimizeConfig(benchmark="fake/capped", workers=3, step_cap=5)
    assert (build(config).workers, build(config).step_cap) == (3, 5)
    assert (build(config, workers=1, step_cap=9).workers, build(config, workers=1, step_cap=9).step_cap) == (1, 9)
