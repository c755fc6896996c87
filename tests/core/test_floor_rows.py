"""scripts/measure_benchmarks.py: the floors of an interactive benchmark (random, the program alone with a constant
reply) as rows with their commands, next to the agent's rows."""

from __future__ import annotations

import shutil

import pytest
from script_modules import load_script


@pytest.fixture(scope="module")
def mb():
    return load_script("measure_benchmarks")


def test_labels_and_commands(mb):
    assert mb.label_of("floor", "twx", None) == "random" and mb.label_of("floor", "hotpotqa", None) == "floor"
    assert mb.label_of("alone", "sciworld", None) == "program alone"
    assert mb.label_of("none", "twx", "react_plain") == "no policy (react_plain)"
    assert mb.command_for("floor", "twx/coin", 20, "twx_random", None, None, "1") == \
        "nlgrad eval --benchmark twx/coin --split dev --n 20 --program twx_random"
    assert mb.command_for("none", "twx/coin", 20, "react_plain", None, 30, "1") == \
        "nlgrad eval --benchmark twx/coin --split dev --n 20 --program react_plain --step-cap 30"
    assert mb.command_for("alone", "sciworld/melt", 10, None, None, None, "1") == (
        ".venv/bin/python scripts/measure_benchmarks.py --benchmarks sciworld/melt --n 10 --variants alone")


def test_new_rows_replace_old_ones_and_the_table_orders_floors_before_the_agent(mb):
    old = [{"benchmark": "twx/coin", "variant": "floor", "mean": 0.5},
           {"benchmark": "twx/coin", "variant": "no policy", "mean": 0.9},
           {"benchmark": "hotpotqa", "variant": "floor", "mean": 0.1}]
    new = [{"benchmark": "twx/coin", "variant": "random", "mean": 0.55},
           {"benchmark": "twx/coin", "variant": "program alone", "mean": 0.95}]
    merged = mb.merge(old, new)
    assert [(r["benchmark"], r["variant"]) for r in merged] == [
        ("twx/coin", "no policy"), ("hotpotqa", "floor"), ("twx/coin", "random"), ("twx/coin", "program alone")]
    rows = [{**r, "splits": "1/1/1", "n": 1, "ci95": [0, 1], "success": 0, "errors": 0, "s_per_task": 0,
             "command": "c"} for r in merged + [{"benchmark": "twx/coin", "variant": "no policy (react_plain)",
                                                  "mean": 0.2}]]
    table = mb.to_markdown(rows)
    order = [line.split(" | ")[2] for line in table.splitlines()[2:]]
    assert order == ["floor", "random", "program alone", "no policy", "no policy (react_plain)"]


@pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java")
def test_random_and_program_alone_rows_run_without_a_model(mb):
    pytest.importorskip("textworld_express")
    from nlgrad.config import Settings

    rows = mb.measure("twx/twc", 2, None, Settings(), ("floor", "alone"))
    assert [r["variant"] for r in rows] == ["random", "program alone"]
    assert [r["program"] for r in rows] == ["twx_random", "twx_scaffolded"]
    alone = rows[1]
    assert alone["reply"] == "1" and alone["n"] == 2 and alone["errors"] == 0 and alone["mean"] == 1.0
    plain = mb.measure("twx/twc", 1, 5, Settings(), ("alone",), program="react_plain")
    assert plain[0]["variant"] == "program alone (react_plain)" and plain[0]["errors"] == 0
    assert plain[0]["command"].endswith("--variants alone --program react_plain --step-cap 5")
