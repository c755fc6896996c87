"""scripts/trainer_base_eval.py: which rows of a comparison it pairs with the base model, and its refusal without any."""

from __future__ import annotations

import json

import pytest
from script_modules import load_script

base_eval = load_script("trainer_base_eval")


def write_results(tmp_path, records):
    (tmp_path / "results.json").write_text(json.dumps({"records": records, "settings": {"benchmark": "banking77"},
                                                      "test_task_ids": ["a", "b"]}), encoding="utf-8")


def test_only_trainer_rows_with_test_scores_are_paired(tmp_path):
    write_results(tmp_path, [
        {"method": "none", "test": {"a": 1.0, "b": 0.0}},
        {"method": "train:grpo", "test": {"a": 0.0, "b": 1.0}},
        {"method": "train:gigpo", "test": {}},
    ])
    assert base_eval.trainer_rows(tmp_path) == {"train:grpo": {"a": 0.0, "b": 1.0}}


def test_a_comparison_without_trainer_rows_is_refused_before_loading_a_model(tmp_path):
    write_results(tmp_path, [{"method": "nlpg", "test": {"a": 1.0, "b": 1.0}}])
    with pytest.raises(SystemExit, match="no trainer row"):
        base_eval.main(["--compare", str(tmp_path), "--model", "tiny"])
