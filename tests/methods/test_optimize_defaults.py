"""Per-benchmark-kind defaults of ``nlgrad optimize``: interactive benchmarks get small runs; an explicit flag wins."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import nlgrad.optimize as optimize
from nlgrad.cli import app
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import KIND_DEFAULTS, resolve_config


class Bench:
    """Just enough of a benchmark for default resolution and a dry run."""

    default_program = "toy"

    def __init__(self, kind="interactive", default_step_cap=50, optimize_defaults=None):
        self.id, self.kind, self.default_step_cap = f"fake/{kind}", kind, default_step_cap
        if optimize_defaults is not None:
            self.optimize_defaults = optimize_defaults


class Program:
    name, routes = "toy", ["toy.act"]


@pytest.fixture
def bench(monkeypatch):
    holder = {"bench": Bench()}
    monkeypatch.setattr(optimize, "load_benchmark", lambda bid, **kw: holder["bench"])
    monkeypatch.setattr(optimize, "load_program", lambda name, benchmark=None, **kw: Program())
    return holder


def picked(config: OptimizeConfig) -> dict:
    return {k: getattr(config, k) for k in ("iterations", "batch", "val", "test_n", "step_cap")}


# written out, not read from KIND_DEFAULTS: a test that compares the table with itself cannot fail
INTERACTIVE = {"iterations": 2, "batch": 3, "val": 3, "test_n": 6, "step_cap": 20}


def test_interactive_benchmarks_get_the_small_twx_defaults(bench):
    assert KIND_DEFAULTS["interactive"] == INTERACTIVE
    assert picked(resolve_config(benchmark="twx/coin")) == INTERACTIVE
    assert picked(resolve_config(benchmark="twx/coin", iterations=None, batch=None, val=None, test_n=None,
                                 step_cap=None, method="jerp")) == INTERACTIVE


def test_explicit_values_win_even_when_falsy(bench):
    config = resolve_config(benchmark="twx/coin", batch=5, test_n=0, step_cap=50)
    assert picked(config) == {"iterations": 2, "batch": 5, "val": 3, "test_n": 0, "step_cap": 50}


def test_static_benchmarks_keep_the_config_defaults(bench):
    bench["bench"] = Bench(kind="static", default_step_cap=None)
    base = OptimizeConfig(benchmark="x")
    assert picked(resolve_config(benchmark="x")) == picked(base) == \
        {"iterations": 4, "batch": 6, "val": 30, "test_n": 20, "step_cap": None}


def test_a_benchmark_may_refine_its_kind_defaults(bench):
    bench["bench"] = Bench(optimize_defaults={"step_cap": 40, "val": 5})
    assert picked(resolve_config(benchmark="x")) == {"iterations": 2, "batch": 3, "val": 5, "test_n": 6,
                                                     "step_cap": 40}
    assert resolve_config(benchmark="x", step_cap=9).step_cap == 9


def test_fully_explicit_config_does_not_load_the_benchmark(monkeypatch):
    def boom(bid, **kw):
        raise AssertionError("not needed")

    monkeypatch.setattr(optimize, "load_benchmark", boom)
    config = resolve_config(benchmark="x", iterations=1, batch=2, val=3, test_n=4, step_cap=5)
    assert picked(config) == {"iterations": 1, "batch": 2, "val": 3, "test_n": 4, "step_cap": 5}


def _dry_run(*extra: str) -> str:
    result = CliRunner().invoke(app, ["optimize", "--benchmark", "twx/coin", "--out", "unused", "--dry-run",
                                      "--lm", "openai/test-model", "--critic-lm", "openai/test-model", *extra])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_cli_uses_the_kind_defaults_unless_a_flag_is_given(bench, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "iterations 2, batch 3, val 3, test_n 6, step_cap 20" in _dry_run()
    assert "iterations 2, batch 6, val 3, test_n 0, step_cap 50" in _dry_run("--batch", "6", "--test-n", "0",
                                                                             "--step-cap", "50")
    assert not (tmp_path / "unused").exists()


def test_help_documents_the_defaults():
    result = CliRunner().invoke(app, ["optimize", "--help"], terminal_width=200)
    text = "".join(result.output.split())
    d = INTERACTIVE
    assert (f"--iterations{d['iterations']}--batch{d['batch']}--val{d['val']}--test-n{d['test_n']}"
            f"--step-cap{d['step_cap']}") in text
    assert "--method-option" in text and "NAME=VALUE" in text
