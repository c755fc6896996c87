"""Aggregation and table math on known numbers (no LM)."""

import json

import pytest

from nlgrad.compare.results import SeedRecord, learning_curve, rollouts_by_iteration
from nlgrad.compare.table import aggregate, format_row, to_markdown
from nlgrad.stats import bootstrap_ci, paired_difference

TASKS = ["t1", "t2", "t3", "t4"]


def rec(method, seed, scores, **kw):
    return SeedRecord(method=method, seed=seed, test=dict(zip(TASKS, scores)), **kw)


def test_rows_average_seeds_per_task_and_pair_against_the_strongest_baseline():
    records = [
        rec("none", 0, [0, 0, 1, 0], rollouts=0),
        rec("human", 0, [1, 0, 1, 0], rollouts=0),
        rec("nlpg", 0, [1, 1, 1, 0], rollouts=10, tokens=1000, usd=0.5, wall_s=30),
        rec("nlpg", 1, [1, 0, 1, 1], rollouts=14, tokens=3000, usd=1.5, wall_s=90),
    ]
    rows, reference, task_ids = aggregate(records, ["none", "human", "nlpg"])
    assert reference == "human" and task_ids == TASKS
    by = {r["method"]: r for r in rows}
    nlpg_tasks = [1.0, 0.5, 1.0, 0.5]  # per-task mean over the two seeds
    assert by["nlpg"]["mean"] == pytest.approx(0.75)
    assert by["nlpg"]["ci95"] == pytest.approx(list(bootstrap_ci(nlpg_tasks).to_dict()["ci95"]))
    expected = paired_difference(nlpg_tasks, [1, 0, 1, 0])
    assert by["nlpg"]["diff"] == pytest.approx(0.25) == pytest.approx(expected.mean)
    assert by["nlpg"]["diff_ci95"] == pytest.approx([expected.lo, expected.hi])
    assert by["none"]["diff"] == pytest.approx(-0.25)
    assert by["human"]["diff"] is None and by["human"]["reference"]
    assert by["nlpg"]["rollouts"] == 12 and by["nlpg"]["tokens"] == 2000 and by["nlpg"]["usd"] == 1.0
    assert by["nlpg"]["wall_s"] == 60 and by["nlpg"]["seeds"] == 2


def test_constant_scores_give_a_zero_width_interval():
    rows, _, _ = aggregate([rec("none", 0, [1, 1, 1, 1]), rec("gepa", 0, [1, 1, 1, 1])], ["none", "gepa"])
    assert rows[0]["ci95"] == [1.0, 1.0] and rows[1]["diff_ci95"] == [0.0, 0.0]


def test_reference_is_a_baseline_even_when_a_method_scores_higher():
    rows, reference, _ = aggregate([rec("none", 0, [0, 0, 0, 1]), rec("gepa", 0, [0, 1, 0, 1]),
                                    rec("nlpg", 0, [1, 1, 1, 1])], ["nlpg", "none", "gepa"])
    assert reference == "gepa"
    assert rows[0]["diff"] == pytest.approx(0.5)


def test_unavailable_and_partial_rows_say_why():
    records = [rec("none", 0, [0, 1, 0, 1]),
               SeedRecord(method="miprov2", seed=0, status="unavailable", reason="needs optuna"),
               rec("nlpg", 0, [1, 1, 0, 1]),
               SeedRecord(method="nlpg", seed=1, status="failed", reason="boom")]
    rows, reference, _ = aggregate(records, ["none", "miprov2", "nlpg", "grpo"])
    by = {r["method"]: r for r in rows}
    assert by["miprov2"]["mean"] is None and "optuna" in format_row(by["miprov2"])[3]
    assert by["nlpg"]["seeds"] == 1 and "(1/2 seeds)" in format_row(by["nlpg"])[0]
    assert by["grpo"]["status"] == "missing"
    table = to_markdown(rows, reference, title="toy")
    assert "| miprov2 | n/a |" in table and "Δ vs none" in table and table.count("\n|") == 6


def test_learning_curve_and_rollouts_from_files(tmp_path):
    work = tmp_path / "run"
    for it, n in ((1, 3), (2, 5), (3, 2)):
        folder = work / f"iter-{it:04d}" / "rollouts"
        folder.mkdir(parents=True)
        lines = [json.dumps({"task_id": f"x{i}"}) for i in range(n)] + ['{"task_id": "torn']
        (folder / "results.jsonl").write_text("\n".join(lines))
    state = {"history": [
        {"iteration": 1, "accepted": False, "gate": {}},
        {"iteration": 2, "accepted": True, "gate": {"candidate_mean": 0.5, "current_mean": 0.25}},
        {"iteration": 3, "accepted": False, "gate": {"candidate_mean": 0.1, "current_mean": 0.5}},
    ]}
    (work / "state.json").write_text(json.dumps(state))
    assert rollouts_by_iteration(work) == {1: 3, 2: 5, 3: 2}
    assert learning_curve(work) == [(0, 0.25), (8, 0.5), (10, 0.5)]
