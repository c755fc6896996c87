"""scripts/compare_rows.py: per-seed rows of a compare folder, paired with the same seed's no-policy row."""

from __future__ import annotations

import json
from pathlib import Path

from nlgrad.compare.results import SeedRecord
from script_modules import load_script

rows_script = load_script("compare_rows")


def _record(out: Path, method: str, seed: int, test: dict[str, float], **extra) -> None:
    seed_dir = out / method / f"seed{seed}"
    (seed_dir / "run").mkdir(parents=True)
    (seed_dir / "run" / "identity.json").write_text(json.dumps({"roles": {"agent": {"model": "local/m-1.5b"}}}))
    SeedRecord(method=method, seed=seed, test=test, **extra).save(seed_dir)


def test_rows_pair_each_method_with_the_same_seeds_no_policy(tmp_path):
    (tmp_path / "compare.json").write_text(json.dumps({"benchmark": "ifeval", "methods": ["none", "nlpg"]}))
    _record(tmp_path, "none", 0, {"a": 0.0, "b": 1.0, "c": 0.5})
    _record(tmp_path, "nlpg", 0, {"a": 1.0, "b": 1.0, "c": 0.0}, rollouts=40, tokens=900, accepted=1)
    _record(tmp_path, "nlpg", 1, {"a": 1.0, "b": 1.0, "c": 1.0})  # no seed-1 none: no paired columns
    rows = rows_script.rows_of(tmp_path, "nlgrad compare ...")
    by = {(r["method"], r["seed"]): r for r in rows}
    assert [(r["method"], r["seed"]) for r in rows] == [("none", 0), ("nlpg", 0), ("nlpg", 1)]
    nlpg = by[("nlpg", 0)]
    assert (nlpg["agent"], nlpg["n"], nlpg["won"], nlpg["lost"]) == ("local/m-1.5b", 3, 1, 1)
    assert abs(nlpg["diff"] - (1.0 - 0.5) / 3) < 1e-3
    assert (nlpg["rollouts"], nlpg["tokens"], nlpg["accepted"]) == (40, 900, 1)
    assert "diff" not in by[("nlpg", 1)] and "diff" not in by[("none", 0)]
    assert "| `ifeval` | 1.5B | nlpg | 0 | 3 |" in rows_script.table(rows)


def test_merge_replaces_rows_of_the_same_key_and_keeps_the_rest():
    old = [{"benchmark": "b", "agent": "x", "method": "none", "seed": 0, "mean": 0.1, "command": "A"},
           {"benchmark": "b", "agent": "x", "method": "nlpg", "seed": 0, "mean": 0.2, "command": "A"}]
    new = [{"benchmark": "b", "agent": "x", "method": "nlpg", "seed": 0, "mean": 0.3, "command": "A"}]
    assert [r["mean"] for r in rows_script.merge(old, new)] == [0.1, 0.3]
    other = [{"benchmark": "b", "agent": "x", "method": "nlpg", "seed": 0, "mean": 0.4, "command": "B"}]
    assert [r["mean"] for r in rows_script.merge(old, other)] == [0.1, 0.2, 0.4]  # another run: kept beside


def test_table_names_each_rows_run_when_there_are_several_commands(tmp_path):
    (tmp_path / "compare.json").write_text(json.dumps({"benchmark": "ifeval", "methods": ["none", "nlpg"]}))
    _record(tmp_path, "none", 0, {"a": 0.0, "b": 1.0})
    _record(tmp_path, "nlpg", 0, {"a": 1.0, "b": 1.0})
    first = rows_script.rows_of(tmp_path, "nlgrad compare --out one")
    second = [dict(r, command="nlgrad compare --out two") for r in first]
    single = rows_script.table(first)
    assert single.startswith("| benchmark |") and "nlgrad compare --out one\n```" in single
    both = rows_script.table(rows_script.merge(first, second))
    assert both.startswith("| run | benchmark |")
    assert "| A | `ifeval` | 1.5B | nlpg | 0 |" in both and "| B | `ifeval` | 1.5B | nlpg | 0 |" in both
    assert "nlgrad compare --out one  # A" in both and "nlgrad compare --out two  # B" in both


def test_policies_copies_a_learning_methods_policy_memory_and_names_it(tmp_path):
    out, policies = tmp_path / "cmp", tmp_path / "policies"
    out.mkdir()
    (out / "compare.json").write_text(json.dumps({"benchmark": "ifeval", "methods": ["none", "nlpg"]}))
    _record(out, "none", 0, {"a": 0.0})
    _record(out, "nlpg", 0, {"a": 1.0}, rollouts=40)
    learned = out / "nlpg" / "seed0"
    for name in ("manifest.json", "v0001.json", "v0002.json", "rejected.jsonl", "gross_ledger.json"):
        (learned / name).write_text(f"{name}\n")
    rows = rows_script.rows_of(out, "nlgrad compare ...", policies)
    by = {r["method"]: r for r in rows}
    copied = policies / "nlpg" / "seed0"
    assert by["nlpg"]["policy_dir"] == str(copied)
    assert sorted(p.name for p in copied.iterdir()) == ["manifest.json", "record.json", "rejected.jsonl", "v0001.json",
                                                        "v0002.json"]
    assert (copied / "v0002.json").read_text() == "v0002.json\n"
    assert SeedRecord.load(copied).test == {"a": 1.0}
    assert by["none"]["policy_dir"] == str(out / "none" / "seed0")  # nothing learned: only its record is kept
    assert [p.name for p in (policies / "none" / "seed0").iterdir()] == ["record.json"]
