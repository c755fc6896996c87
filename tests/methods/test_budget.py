"""Budgets (nlgrad/methods/budget.py): calls, tokens, dollars and wall time each stop a run at their limit; cache hits
cost nothing; a limit of zero or less is refused, naming its option."""

from __future__ import annotations

import math

import pytest

from nlgrad.errors import ConfigError
from nlgrad.lm.ledger import Ledger
from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.budget import Budget
from nlgrad.optimize import run_optimize


def ledger(*calls: tuple[int, int, float], cached: int = 0) -> Ledger:
    """One recorded call per (prompt tokens, completion tokens, usd); ``cached`` cache hits on top."""
    out = Ledger()
    for prompt, completion, usd in calls:
        out.record("agent", cached=False, prompt_tokens=prompt, completion_tokens=completion, cost_usd=usd)
    for _ in range(cached):
        out.record("critic", cached=True)
    return out


def test_token_budget_counts_prompt_and_completion_tokens():
    spent = ledger((60, 30, 0.0), (5, 4, 0.0))  # 99 tokens
    assert Budget(tokens=100).exceeded(spent, 0.0) is None
    assert Budget(tokens=99).exceeded(spent, 0.0) == "token budget reached (99 >= 99)"


def test_usd_budget():
    spent = ledger((10, 10, 0.012), (10, 10, 0.0005))
    assert Budget(usd=0.02).exceeded(spent, 0.0) is None
    assert Budget(usd=0.0125).exceeded(spent, 0.0) == "cost budget reached ($0.0125 >= $0.0125)"


def test_time_budget():
    assert Budget(time_s=60).exceeded(Ledger(), 59.9) is None
    assert Budget(time_s=60).exceeded(Ledger(), 60.0) == "time budget reached (60s >= 60s)"


def test_cache_hits_are_free_and_the_first_limit_reached_is_named():
    hits = ledger(cached=50)
    assert Budget(calls=1, tokens=1, usd=0.001, time_s=10).exceeded(hits, 0.0) is None
    spent = ledger((500, 500, 1.0))
    assert Budget(tokens=10, usd=0.5, time_s=1).exceeded(spent, 5.0).startswith("token budget")
    assert Budget(tokens=10_000, usd=0.5, time_s=1).exceeded(spent, 5.0).startswith("cost budget")
    assert Budget().exceeded(spent, 1e9) is None  # no limits


@pytest.mark.parametrize("name, option", [("calls", "--budget-calls"), ("tokens", "--budget-tokens"),
                                          ("usd", "--budget-usd"), ("time_s", "--budget-time")])
@pytest.mark.parametrize("value", [0, -1, math.nan])
def test_a_limit_of_zero_or_less_is_refused_naming_its_option(name, option, value):
    with pytest.raises(ConfigError, match="greater than zero") as info:
        Budget(**{name: value})
    assert info.value.field == option


@pytest.mark.parametrize("budget, reason, completed", [
    (Budget(tokens=1), "token budget", 1),  # checked before each iteration: the first spends the tokens
    (Budget(time_s=1e-6), "time budget", 0),  # already spent when the loop starts
])
def test_token_and_time_budgets_stop_the_loop_between_iterations(settings, fake_world, shout, tmp_path, budget,
                                                                 reason, completed):
    config = OptimizeConfig(benchmark="shout", iterations=2, batch=4, val=4, test_n=4)
    outcome = run_optimize(config, settings, tmp_path / "p", budget=budget, progress=False)
    assert outcome.state.completed == completed and reason in outcome.state.stop_reason
    assert outcome.state.finished and outcome.test is not None  # still ends with the test comparison
