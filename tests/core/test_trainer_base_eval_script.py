"""scripts/trainer_base_eval.py: which rows of a comparison it pairs with the base model, which model it scores, and
its refusals."""

from __future__ import annotations

import json

import pytest
from script_modules import load_script

base_eval = load_script("trainer_base_eval")


def write_results(tmp_path, records, method_options=None):
    results = {"records": records, "settings": {"benchmark": "banking77", "method_options": method_options or {}},
               "test_task_ids": ["a", "b"]}
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return results


def test_only_trainer_rows_with_test_scores_are_paired(tmp_path):
    results = write_results(tmp_path, [
        {"method": "none", "test": {"a": 1.0, "b": 0.0}},
        {"method": "train:grpo", "test": {"a": 0.0, "b": 1.0}},
        {"method": "train:gigpo", "test": {}},
    ])
    assert base_eval.trainer_rows(results) == {"train:grpo": {"a": 0.0, "b": 1.0}}


def test_the_rows_model_is_used_only_when_every_row_agrees(tmp_path):
    results = write_results(tmp_path, [], {"train:grpo": {"model": "m", "max_new_tokens": 24},
                                           "train:gigpo": {"model": "m", "max_new_tokens": 16}})
    assert base_eval.rows_option(results, ["train:gigpo", "train:grpo"], "model") == "m"
    assert base_eval.rows_option(results, ["train:gigpo", "train:grpo"], "max_new_tokens") is None
    assert base_eval.rows_option(results, ["train:grpo"], "max_new_tokens") == 24


def test_rows_with_different_models_need_model_named(tmp_path):
    write_results(tmp_path, [{"method": "train:grpo", "test": {"a": 1.0}},
                             {"method": "train:gigpo", "test": {"a": 0.0}}],
                  {"train:grpo": {"model": "m1"}, "train:gigpo": {"model": "m2"}})
    with pytest.raises(SystemExit, match="pass --model"):
        base_eval.main(["--compare", str(tmp_path)])


def test_a_comparison_without_trainer_rows_is_refused_before_loading_a_model(tmp_path):
    write_results(tmp_path, [{"method": "nlpg", "test": {"a": 1.0, "b": 1.0}}])
    with pytest.raises(SystemExit, match="no trainer row"):
        base_eval.main(["--compare", str(tmp_path), "--model", "tiny"])
