"""Per-seed rows of an ``nlgrad compare --out DIR`` folder, machine-readable and as a README table.

    .venv/bin/python scripts/compare_rows.py reports/ifeval-1.5b --command "nlgrad compare ..." \
        [--rows benchmarks/results/compare.json] [--readme FILE]

One row per finished (method, seed): benchmark, agent, method, seed, n, mean with its 95% CI, the paired difference
to the same seed's ``none`` with its CI and won/lost counts, rollouts, tokens, optimizing wall time, accepted
updates, the policy folder and the command. Rows of the same (benchmark, agent, method, seed, command) replace older
ones in ``--rows``; the table between the ``compare-table`` markers of ``--readme`` is rewritten from every row there
(several commands: a ``run`` column says which command each row belongs to).
``--policies DIR`` copies every seed's ``record.json`` (its per-task test scores, so rows can be paired again once the
run folder is gone) and each learning method's policy memory (``manifest.json``, the version files and
``rejected.jsonl``; not the run folders) to ``DIR/<method>/seed<k>``, which a learning method's row then names as its
policy folder.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from nlgrad.compare.results import RECORD_NAME, SeedRecord  # record.json: per-task test scores, counts
from nlgrad.files import replace_block, write_json_atomic
from nlgrad.stats import bootstrap_ci, paired_comparison

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- compare-table:begin -->", "<!-- compare-table:end -->"
KEY = ("benchmark", "agent", "method", "seed", "command")
POLICY_FILES = ("manifest.json", "v[0-9]*.json", "rejected.jsonl")


def _agent(seed_dir: Path) -> str:
    identity = seed_dir / "run" / "identity.json"
    if not identity.exists():
        return ""
    return json.loads(identity.read_text(encoding="utf-8"))["roles"]["agent"]["model"]


def _ci(estimate) -> list[float]:
    return [round(estimate.lo, 4), round(estimate.hi, 4)]


def copy_policy(seed_dir: Path, dest: Path, *, policy: bool = True) -> Path:
    """The seed's ``record.json`` and (``policy``) its policy memory files copied into ``dest`` (replacing what was
    there)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copy2(seed_dir / RECORD_NAME, dest / RECORD_NAME)
    for pattern in POLICY_FILES if policy else ():
        for path in sorted(seed_dir.glob(pattern)):
            shutil.copy2(path, dest / path.name)
    return dest


def _display(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def rows_of(out: Path, command: str, policies: Path | None = None) -> list[dict[str, Any]]:
    """Rows of every finished (method, seed) under ``out``, paired with the same seed's ``none``; with
    ``policies``, each learning method's policy memory is copied there and named as the row's policy folder."""
    settings = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    records: dict[tuple[str, int], tuple[SeedRecord, Path]] = {}
    for path in sorted(out.glob("*/seed*/record.json")):
        record = SeedRecord.load(path.parent)
        if record is not None and record.ok:
            records[(record.method, record.seed)] = (record, path.parent)
    rows = []
    order = {method: i for i, method in enumerate(settings["methods"])}
    for (method, seed), (record, seed_dir) in sorted(records.items(),
                                                      key=lambda kv: (order.get(kv[0][0], len(order)), kv[0][1])):
        estimate = bootstrap_ci([record.test[t] for t in sorted(record.test)])
        policy_dir = str(seed_dir)
        learned = record.rollouts > 0
        if policies is not None:
            kept = copy_policy(seed_dir, policies.resolve() / method / f"seed{seed}", policy=learned)
            policy_dir = _display(kept) if learned else policy_dir
        row: dict[str, Any] = {
            "benchmark": settings["benchmark"], "agent": _agent(seed_dir), "method": method, "seed": seed,
            "n": estimate.n, "mean": round(estimate.mean, 4), "ci95": _ci(estimate),
            "rollouts": record.rollouts, "tokens": record.tokens, "wall_s": round(record.wall_s, 1),
            "test_wall_s": round(record.test_wall_s, 1), "accepted": record.accepted,
            "policy_dir": policy_dir, "command": command,
        }
        none = records.get(("none", seed))
        if none is not None and method != "none":
            row.update({"vs": "none", **paired_comparison(record.test, none[0].test)})
        rows.append(row)
    return rows


def merge(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``old`` with rows of the same key replaced by ``new`` ones (new keys appended, order kept)."""
    fresh = {tuple(r[k] for k in KEY): r for r in new}
    kept = [r for r in old if tuple(r[k] for k in KEY) not in fresh]
    return kept + new


def _short_agent(model: str) -> str:
    return model.rsplit("-", 1)[-1].upper() if model.startswith("local/") else model


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table and the commands behind them; with more than one command, a ``run`` column
    names each row's command by letter (A, B, ...: order of first appearance), and rows pair with their own run's
    ``none``."""
    commands = list(dict.fromkeys(r["command"] for r in rows))
    letter = {command: chr(ord("A") + i) for i, command in enumerate(commands)}
    runs = len(commands) > 1
    out = [("| run " if runs else "") + "| benchmark | agent | method | seed | n | mean [95% CI] "
           "| paired diff vs none [95% CI] | won / lost | accepted | rollouts | tokens | wall s |",
           ("|---" if runs else "") + "|---|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        diff = (f"{r['diff']:+.3f} [{r['diff_ci95'][0]:+.3f}, {r['diff_ci95'][1]:+.3f}]" if "diff" in r else "")
        won = f"{r['won']} / {r['lost']}" if "won" in r else ""
        out.append((f"| {letter[r['command']]} " if runs else "")
                   + f"| `{r['benchmark']}` | {_short_agent(r['agent'])} | {r['method']} | {r['seed']} | {r['n']} "
                   f"| {r['mean']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] | {diff} | {won} | {r['accepted']} "
                   f"| {r['rollouts']} | {r['tokens']} | {r['wall_s']:.0f} |")
    listed = [f"{command}  # {letter[command]}" if runs else command for command in commands]
    out += ["", "```bash", *listed, "```"]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="an nlgrad compare --out folder")
    parser.add_argument("--command", required=True, help="the nlgrad compare command that wrote it")
    parser.add_argument("--rows", type=Path, default=ROOT / "benchmarks/results/compare.json")
    parser.add_argument("--readme", default="", help="a file whose compare-table markers get the table (default: none)")
    parser.add_argument("--policies", type=Path,
                        help="copy the records and learned policies here (DIR/<method>/seed<k>)")
    args = parser.parse_args()
    old = json.loads(args.rows.read_text(encoding="utf-8")) if args.rows.exists() else []
    rows = merge(old, rows_of(args.out, args.command, args.policies))
    write_json_atomic(args.rows, rows)
    if args.readme:
        readme = Path(args.readme)
        readme.write_text(replace_block(readme.read_text(encoding="utf-8"), BEGIN, END, table(rows)), encoding="utf-8")
    for r in rows:
        print(r["method"], r["seed"], r["n"], r["mean"], r.get("diff"), r.get("diff_ci95"))


if __name__ == "__main__":
    main()
