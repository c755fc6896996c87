"""Rows of the intent-routing results table from `nlgrad eval` run directories, paired against no policy.

    python scripts/intent_rows.py --none runs/EVAL_NONE --row nlpg=runs/EVAL_NLPG --row random_examples=runs/EVAL_R \
        [--out benchmarks/results/intent.json]

Each run directory is one `nlgrad eval` (its config.json says the benchmark, split, n, agent and policy). A row gets
the run's mean and 95% CI, the policy's active entry count, the benchmark's own aggregates (summary.json
``metrics``), the command that reproduces it, and ``diff_vs_none: {mean, ci95, n, won, lost}``, paired task by task
with the ``--none`` run (same benchmark and split; tasks both runs scored); ``--control random_examples`` adds
``diff_vs_random_examples`` to the other learned rows the same way; ``--learned RUN_DIR`` (the learned file's eval)
adds ``learned_vs_this`` to every row but none: the learned file's score minus the row's, paired the same way (how
the learned file stands against a peer). Rows are merged into ``--out`` by
(benchmark, split, method, agent, n): a rerun replaces its row.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nlgrad.files import write_json_atomic  # noqa: E402
from nlgrad.stats import bootstrap_ci, paired_comparison, paired_difference  # noqa: E402


def read_run(path: Path) -> tuple[dict, dict[str, float], dict]:
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    scores = {}
    for line in (path / "results.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("error") is None:
                scores[row["task_id"]] = float(row["score"])
    summary = json.loads((path / "summary.json").read_text(encoding="utf-8")) if (path / "summary.json").exists() \
        else {}
    return config, scores, summary


def command(config: dict) -> str:
    parts = ["nlgrad eval", f"--benchmark {config['benchmark']}", f"--split {config['split']}", f"--n {config['n']}",
             f"--lm {config['roles']['agent']['model']}"]
    if config.get("program"):
        parts.append(f"--program {config['program']}")
    if config.get("policy"):
        parts.append(f"--policy {config['policy']}")
    if config.get("examples_k"):
        parts.append(f"--examples-k {config['examples_k']}")
    return " ".join(parts)


def policy_facts(config: dict) -> tuple[int, int | None]:
    """The run's policy, loaded once: its entry count, and the examples shown per call (the eval's
    ``--examples-k``, else the policy's own selection k; None: no examples)."""
    k = int(config["examples_k"]) if config.get("examples_k") else None
    if not config.get("policy"):
        return 0, k
    from nlgrad.policy import PolicyMemory

    memory = PolicyMemory.load(config["policy"])
    selection = memory.selection
    if k is None and selection is not None and selection.kind == "examples":
        k = selection.k
    return memory.n_entries(), k


Run = tuple[dict, dict[str, float], dict]  # read_run's (config, scores by task id, summary)


def paired(scores: dict[str, float], other: dict[str, float]) -> dict:
    """``scores`` minus ``other`` on the tasks both scored: ``{mean, ci95, n, won, lost}``."""
    shared = sorted(set(scores) & set(other))
    diff = paired_difference([scores[i] for i in shared], [other[i] for i in shared])
    pair = paired_comparison(scores, other)
    return {"mean": round(diff.mean, 4), "ci95": [round(diff.lo, 4), round(diff.hi, 4)], "n": len(shared),
            "won": pair["won"], "lost": pair["lost"]}


def shown(d: dict) -> str:
    return f"{d['mean']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]"


def row(method: str, path: Path, run: Run, none: Run) -> dict:
    config, scores, summary = run
    base_config, base_scores, _ = none
    n_entries, examples_k = policy_facts(config)
    if (config["benchmark"], config["split"]) != (base_config["benchmark"], base_config["split"]):
        raise SystemExit(f"{path}: {config['benchmark']}/{config['split']} is not the --none run's "
                         f"{base_config['benchmark']}/{base_config['split']}")
    est = bootstrap_ci(list(scores.values()))
    return {"benchmark": config["benchmark"], "split": config["split"], "method": method,
            "agent": config["roles"]["agent"]["model"], "program": config.get("program"),
            "policy": config.get("policy"), "entries": n_entries, "examples_k": examples_k, "n": len(scores),
            "mean": round(est.mean, 4), "ci95": [round(est.lo, 4), round(est.hi, 4)],
            "metrics": {k: round(v, 4) for k, v in (summary.get("metrics") or {}).items()},
            "diff_vs_none": paired(scores, base_scores), "command": command(config)}


def add_control_diffs(rows: list[dict], control: str, scores: dict[str, dict[str, float]]) -> None:
    """Adds ``diff_vs_<control>`` to every row but none and the control, paired task by task with the control's run."""
    if control not in scores:
        raise SystemExit(f"--control {control}: no --row {control}=RUN_DIR given")
    for r in rows:
        if r["method"] in ("none", control):
            continue
        d = r[f"diff_vs_{control}"] = paired(scores[r["method"]], scores[control])
        print(f"{r['benchmark']} {r['method']} vs {control}: {shown(d)} won {d['won']} lost {d['lost']}")


def add_learned_diffs(rows: list[dict], learned: Run, scores: dict[str, dict[str, float]]) -> None:
    """Adds ``learned_vs_this`` (the learned run minus the row's, paired) to every row but none."""
    config, learned_scores, _ = learned
    for r in rows:
        if r["method"] == "none":
            continue
        d = r["learned_vs_this"] = {"learned_policy": config.get("policy"),
                                    **paired(learned_scores, scores[r["method"]])}
        print(f"{r['benchmark']} learned vs {r['method']}: {shown(d)} n={d['n']} won {d['won']} lost {d['lost']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--none", required=True, type=Path, help="the no-policy eval run directory")
    parser.add_argument("--row", action="append", default=[], metavar="METHOD=RUN_DIR")
    parser.add_argument("--control", metavar="METHOD",
                        help="also pair every other learned row with this row's run (e.g. random_examples)")
    parser.add_argument("--learned", type=Path, metavar="RUN_DIR",
                        help="the learned file's eval: every row gets learned_vs_this (learned minus the row)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "intent.json")
    parser.add_argument("--print-only", action="store_true", help="print the rows, merge nothing into --out")
    args = parser.parse_args(argv)
    none = read_run(args.none)
    rows = [row("none", args.none, none, none)]
    scores: dict[str, dict[str, float]] = {}
    for spec in args.row:
        method, _, path = spec.partition("=")
        run = read_run(Path(path))
        scores[method] = run[1]
        rows.append(row(method, Path(path), run, none))
    if args.control:
        add_control_diffs(rows, args.control, scores)
    if args.learned:
        add_learned_diffs(rows, read_run(args.learned), scores)
    if not args.print_only:
        merge(args.out, rows)
    for r in rows:
        d = r["diff_vs_none"]
        print(f"{r['benchmark']} {r['method']:<16} n={r['n']} entries={r['entries']:<4} k={r['examples_k']} "
              f"{r['mean']:.3f} diff {shown(d)} won {d['won']} lost {d['lost']}")


def merge(out: Path, rows: list[dict]) -> None:
    """Merges ``rows`` into the results file ``out`` by (benchmark, split, program, method, agent, n): a rerun
    replaces its row, and the same method on another program is another row."""
    old = json.loads(out.read_text(encoding="utf-8")) if out.exists() else []
    key = lambda r: (r["benchmark"], r["split"], r.get("program"), r["method"], r["agent"], r["n"])  # noqa: E731
    merged = {key(r): r for r in old}
    merged.update({key(r): r for r in rows})
    write_json_atomic(out, sorted(merged.values(), key=lambda r: (r["benchmark"], r["agent"], r["n"],
                                                                 r.get("program") or "",
                                                                 r["method"] != "none", r["method"])))


if __name__ == "__main__":
    main()
