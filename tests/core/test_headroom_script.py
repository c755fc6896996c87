"""scripts/headroom.py: variants, the command each row carries (dev or test split), and the README block it writes
between the markers it is told."""

from __future__ import annotations

import json

import pytest
from script_modules import load_script


@pytest.fixture(scope="module")
def hr():
    return load_script("headroom")


def test_variant_and_command_name_the_split(hr):
    v = hr.parse_variant("nlpg-whole:policies/ifeval-nlpg:whole")
    assert v == {"label": "nlpg-whole", "policy": "policies/ifeval-nlpg", "whole": True, "placement": "system"}
    assert hr.command("ifeval", 163, None, v, "test") == \
        "nlgrad eval --benchmark ifeval --split test --n 163 --policy policies/ifeval-nlpg --policy-whole"
    assert hr.command("ifeval", 60, "local/qwen2.5-coder-1.5b", hr.parse_variant("none")) == \
        "nlgrad eval --benchmark ifeval --split dev --n 60 --lm local/qwen2.5-coder-1.5b"
    with pytest.raises(SystemExit, match="unknown option"):
        hr.parse_variant("x:human:sideways")


def row(variant: str, split: str, mean: float) -> dict:
    return {"benchmark": "ifeval", "agent": "local/qwen2.5-coder-1.5b", "variant": variant, "split": split, "n": 3,
            "mean": mean, "ci95": [0.0, 1.0], "command": f"nlgrad eval --split {split}"}


def test_rows_of_both_splits_are_kept_and_the_named_table_is_written(hr, tmp_path):
    out = tmp_path / "rows.json"
    hr.save(out, [row("none", "dev", 0.5)])
    hr.save(out, [row("none", "test", 0.4)])
    hr.save(out, [row("none", "test", 0.45)])  # a rerun replaces its own row only
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- evidence-table:begin -->\nold\n<!-- evidence-table:end -->\n"
                      "<!-- headroom-table:begin -->\nkept\n<!-- headroom-table:end -->\n")
    rows = json.loads(out.read_text())
    assert sorted((r["split"], r["mean"]) for r in rows) == [("dev", 0.5), ("test", 0.45)]
    hr.write_readme(readme, [r for r in rows if r["split"] == "test"], "evidence")
    text = readme.read_text()
    assert "old" not in text and "kept" in text and "nlgrad eval --split test" in text
    assert "nlgrad eval --split dev" not in text
