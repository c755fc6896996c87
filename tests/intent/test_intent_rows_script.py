"""scripts/intent_rows.py: rows of the intent table from eval run directories, paired with no policy and with the
random-examples control; --print-only merges nothing."""

from __future__ import annotations

import json

from script_modules import load_script


def write_run(path, scores, *, policy=None, examples_k=None, program="intent_classify"):
    path.mkdir(parents=True)
    config = {"benchmark": "banking77", "split": "test", "n": len(scores), "program": program,
              "policy": policy, "roles": {"agent": {"model": "local/qwen2.5-coder-1.5b"}}}
    if examples_k is not None:
        config["examples_k"] = examples_k
    (path / "config.json").write_text(json.dumps(config))
    (path / "results.jsonl").write_text("".join(json.dumps({"task_id": f"t{i}", "score": s, "error": None}) + "\n"
                                                for i, s in enumerate(scores)))
    (path / "summary.json").write_text(json.dumps({"metrics": {"accuracy": sum(scores) / len(scores)}}))
    return path


def test_rows_pair_with_none_and_the_control_and_print_only_writes_nothing(tmp_path, capsys):
    rows = load_script("intent_rows")
    none = write_run(tmp_path / "none", [0, 0, 0, 1])
    learned = write_run(tmp_path / "learned", [1, 1, 0, 1], examples_k=1)
    control = write_run(tmp_path / "random", [1, 0, 0, 1], examples_k=1)
    out = tmp_path / "intent.json"
    argv = ["--none", str(none), "--row", f"nlpg={learned}", "--row", f"random_examples={control}",
            "--control", "random_examples", "--out", str(out)]
    rows.main(argv + ["--print-only"])
    assert not out.exists()
    assert "nlpg vs random_examples: +0.250" in capsys.readouterr().out
    rows.main(argv)
    by_method = {r["method"]: r for r in json.loads(out.read_text())}
    nlpg = by_method["nlpg"]
    assert nlpg["diff_vs_none"]["mean"] == 0.5 and nlpg["diff_vs_none"]["won"] == 2
    assert nlpg["diff_vs_random_examples"]["mean"] == 0.25 and nlpg["diff_vs_random_examples"]["lost"] == 0
    assert nlpg["examples_k"] == 1 and nlpg["command"].endswith("--examples-k 1")
    assert by_method["none"]["examples_k"] is None and "--examples-k" not in by_method["none"]["command"]


def test_learned_vs_a_peer_is_paired_on_the_tasks_both_scored(tmp_path, capsys):
    rows = load_script("intent_rows")
    none = write_run(tmp_path / "none", [0, 0, 0, 1])
    peer = write_run(tmp_path / "peer", [1, 0, 0])  # a peer evaluated on the first 3 tasks only
    learned = write_run(tmp_path / "learned", [1, 1, 0, 0], policy=None)
    out = tmp_path / "intent.json"
    rows.main(["--none", str(none), "--row", f"miprov2={peer}", "--learned", str(learned), "--out", str(out)])
    by_method = {r["method"]: r for r in json.loads(out.read_text())}
    assert "learned_vs_this" not in by_method["none"]
    vs = by_method["miprov2"]["learned_vs_this"]
    assert vs["n"] == 3 and vs["won"] == 1 and vs["lost"] == 0 and abs(vs["mean"] - 1 / 3) < 1e-3
    assert "learned vs miprov2: +0.333" in capsys.readouterr().out


def test_the_same_method_on_another_program_is_another_row_and_a_rerun_replaces_its_own(tmp_path):
    rows = load_script("intent_rows")
    out = tmp_path / "intent.json"
    classify = write_run(tmp_path / "classify", [0, 1, 0, 1])
    route = write_run(tmp_path / "route", [1, 1, 0, 1], program="intent_route")
    rows.main(["--none", str(classify), "--out", str(out)])
    rows.main(["--none", str(route), "--out", str(out)])
    by_program = {r["program"]: r for r in json.loads(out.read_text())}
    assert set(by_program) == {"intent_classify", "intent_route"}
    assert by_program["intent_route"]["mean"] == 0.75 and by_program["intent_classify"]["mean"] == 0.5
    rerun = write_run(tmp_path / "route-rerun", [0, 0, 0, 1], program="intent_route")
    rows.main(["--none", str(rerun), "--out", str(out)])
    kept = json.loads(out.read_text())
    assert len(kept) == 2 and {r["program"]: r["mean"] for r in kept} == {"intent_classify": 0.5, "intent_route": 0.25}
