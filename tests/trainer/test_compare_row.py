"""A trainer row in ``nlgrad compare`` itself: ``train:gigpo`` (a non-GRPO estimator of the registry) trains the tiny
model on the toy benchmark beside a text method, on the comparison's budget, seed and test tasks, and lands in the
same table and report; a rerun reads the finished row back without training. Also: the row's options are checked
before any work, and a trainer row without a model says so."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from fake_lm import ShoutBenchmark, ShoutProgram, install_fake_lm, nlpg_reply, serve_toy  # noqa: E402

from nlgrad.compare.harness import CompareConfig, Harness, check_options  # noqa: E402
from nlgrad.compare.results import SeedRecord  # noqa: E402
from nlgrad.errors import ConfigError  # noqa: E402
from nlgrad.methods.options import MethodOptionError, parse_compare_options  # noqa: E402
from nlgrad.trainer.estimators import compare_rows  # noqa: E402

ROW = "train:gigpo"
TINY = {"model": "tiny", "lora": False, "device": "cpu", "group_size": 2, "tasks_per_step": 1, "max_new_tokens": 8,
        "lr": 1e-3, "minibatch": 16, "skip_zero_advantage": False}


@pytest.fixture
def toy(monkeypatch):
    import nlgrad.compare.harness as harness
    import nlgrad.trainer.evaluation as evaluation
    import nlgrad.trainer.loop as loop

    install_fake_lm(monkeypatch, lambda messages: nlpg_reply(messages, "shout.say", []))  # the text rows' agent
    bench = ShoutBenchmark()
    serve_toy(monkeypatch, bench, ShoutProgram, modules=(harness, loop, evaluation))
    return bench


def config(**kw) -> CompareConfig:
    base = dict(benchmark="shout", methods=["none", ROW], budget_rollouts=4, seeds=1, test_n=3, val=2, batch=2,
                method_options={ROW: TINY})
    return CompareConfig(**{**base, **kw})


def test_a_gigpo_row_trains_and_is_scored_on_the_same_test_tasks(settings, toy, tmp_path):
    out = tmp_path / "cmp"
    results = Harness(config(), settings, out).run()
    rows = {r["method"]: r for r in results.rows}
    assert set(rows) == {"none", ROW} and rows[ROW]["status"] == "ok"
    record = SeedRecord.load(out / ROW / "seed0")
    test_ids = [t.id for t in toy.tasks("test", 3)]
    assert sorted(record.test) == sorted(test_ids) == sorted(results.test_task_ids)  # paired with the text rows
    # the budget of 4 rollouts is 2 steps of 1 task x G=2; the curve is (cumulative rollouts, score) per step
    assert record.rollouts == 4 and [x for x, _ in record.curve] == [2, 4]
    run = out / ROW / "seed0" / "train"
    saved = json.loads((run / "config.json").read_text())["config"]
    assert saved["method"] == "gigpo" and saved["steps"] == 2 and saved["seed"] == 0 and saved["test_n"] == 3
    curves = [json.loads(line) for line in (run / "curves.jsonl").read_text().splitlines()]
    assert len(curves) == 2 and all(c["updates"] >= 1 and c["trained_turns"] == 2 for c in curves)
    assert (run / "final").is_dir() and record.policy == {"(weights)": str(run / "final")}
    assert ROW in (out / "report.html").read_text() and f"| {ROW} |" in (out / "table.md").read_text()

    again = Harness(config(), settings, out).run()  # finished: read back, nothing trained again
    assert [r.model_dump() for r in again.records] == [r.model_dump() for r in results.records]
    assert len((run / "curves.jsonl").read_text().splitlines()) == 2


def test_trainer_row_options_are_checked_first_and_the_model_is_required(settings, toy, tmp_path):
    assert ROW in compare_rows() and "train:grpo" in compare_rows()
    parsed = parse_compare_options([f"{ROW}.model=tiny", f"{ROW}.omega=0.5", "human.evaluate=false"],
                                   methods=["human", ROW], check=check_options)
    assert parsed == {ROW: {"model": "tiny", "omega": 0.5}, "human": {"evaluate": False}}
    for item, says in [(f"{ROW}.steps=3", "set by the comparison"), (f"{ROW}.lr=-1", "trainer option lr"),
                       (f"{ROW}.colour=red", "colour"), ("train:grpo.progpo_step=true", "progpo_step applies to")]:
        with pytest.raises(ConfigError, match=says):
            parse_compare_options([item], methods=[ROW, "train:grpo"], check=check_options)
    with pytest.raises(MethodOptionError):  # a text method's options are still its constructor's
        parse_compare_options(["none.colour=red"], methods=["none"], check=check_options)

    out = tmp_path / "cmp"
    results = Harness(config(methods=[ROW, "train:nosuch"], method_options={}), settings, out).run()
    rows = {r["method"]: r for r in results.rows}
    assert rows[ROW]["status"] == "unavailable" and f"{ROW}.model=PATH" in rows[ROW]["reason"]
    assert rows["train:nosuch"]["status"] == "unavailable" and "unknown method" in rows["train:nosuch"]["reason"]
