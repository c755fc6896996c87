"""Gold plans from the games' own solvers: TextWorldExpress's gold action sequence of a coin train task (and that it
wins the benchmark's own game), ScienceWorld's of a find-living-thing train variation, the source chosen by
benchmark, and the train-only guard (a few seconds with Java; no model)."""

import shutil

import pytest

from nlgrad.benchmarks.sciworld import ScienceWorldBenchmark
from nlgrad.benchmarks.twx import TextWorldExpressBenchmark
from nlgrad.trainer.gold_plans import (ScienceWorldGoldPlans, TaskGoldPlans, TextWorldExpressGoldPlans,
                                       plan_source_for)

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="the games need Java")


def test_the_source_follows_the_benchmark():
    assert isinstance(plan_source_for(TextWorldExpressBenchmark("coin")).source, TextWorldExpressGoldPlans)
    assert isinstance(plan_source_for(ScienceWorldBenchmark("melt")).source, ScienceWorldGoldPlans)
    assert isinstance(plan_source_for(type("QA", (), {"id": "hotpotqa"})()).source, TaskGoldPlans)


@needs_java
def test_twx_gold_plan_of_a_train_task_wins_the_benchmarks_own_game():
    pytest.importorskip("textworld_express")
    benchmark = TextWorldExpressBenchmark("coin")
    train, test = benchmark.tasks("train", 2)[1], benchmark.tasks("test", 1)[0]
    plans = plan_source_for(benchmark)
    try:
        plan = plans.plan(train)
        # the package's solver wanders (its path differs between runs), but always from a look to the coin
        assert plan[0] == "look around" and plan[-1] == "take coin" and "open door to west" in plan
        assert plans.plan(train) is plan  # cached: one plan per task and run
        with pytest.raises(ValueError, match="train tasks only"):
            plans.plan(test)
    finally:
        plans.close()
    env = benchmark.make_env()  # the benchmark's own environment, never asked for a gold path
    try:
        env.reset(train)
        results = [env.step(action) for action in plan]
    finally:
        env.close()
    assert results[-1].success and results[-1].done and not any(r.done for r in results[:-1])


@needs_java
def test_sciworld_gold_plan_of_a_train_variation():
    pytest.importorskip("scienceworld")
    benchmark = ScienceWorldBenchmark("find-living-thing")
    plans = plan_source_for(benchmark)
    try:
        plan = plans.plan(benchmark.tasks("train", 1)[0])
    finally:
        plans.close()
    assert plan[:2] == ["open door to greenhouse", "go to greenhouse"] and "focus on dove" in plan
    assert len(plan) == 10
