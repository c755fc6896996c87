"""Where can text move a frozen agent? Paired policy variants on one benchmark's dev split (``--split test`` for the
held-out evidence), against no policy.

    .venv/bin/python scripts/headroom.py --benchmark ifeval --lm local/qwen2.5-coder-1.5b --n 60 \
        --variant none --variant human-whole:human:whole --variant human:human \
        --variant probe-a:policies/probes/ifeval-a.yaml --variant probe-a-input:policies/probes/ifeval-a.yaml:input

A variant is ``LABEL[:POLICY[:OPTION[,OPTION]]]``: POLICY is ``human``, a policy file or directory (absent: no
policy); OPTIONS are ``whole`` (every entry to every call, conditions ignored), ``input`` (lessons placed just
before the task input instead of the system prompt) and ``demos`` (example entries as prior user / assistant
turns). Every variant runs ``nlgrad eval`` on the same first N dev tasks (temperature 0, the shared LM cache: a rerun costs nothing), and each row gets the paired difference to the
first variant with a 95% bootstrap CI and the tasks won / lost, and keeps every task's score (``task_scores``), so
any two rows of one benchmark x agent can be paired again without the run folders. Rows are appended to
``benchmarks/results/headroom.json`` (one per benchmark x agent x variant, replaced when rerun) with the command
that reproduces each. ``--readme benchmarks/README.md`` rewrites the table there from every row of the file
(alone, without ``--variant``: only that).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import nlgrad  # noqa: F401  (sets the offline litellm cost map before litellm is imported)
from nlgrad.config import load_settings
from nlgrad.evaluate import EvalRequest, run_eval
from nlgrad.stats import paired_comparison
from nlgrad.files import replace_block

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "headroom.json"


def parse_variant(text: str) -> dict[str, Any]:
    label, _, rest = text.partition(":")
    policy, _, options = rest.partition(":")
    opts = {o.strip() for o in options.split(",") if o.strip()}
    unknown = opts - {"whole", "input", "demos"}
    if unknown:
        raise SystemExit(f"variant {text!r}: unknown option(s) {', '.join(sorted(unknown))} (whole, input, demos)")
    return {"label": label, "policy": policy or None, "whole": "whole" in opts,
            "placement": "input" if "input" in opts else "demos" if "demos" in opts else "system"}


def command(bench: str, n: int, lm: str | None, v: dict[str, Any], split: str = "dev") -> str:
    cmd = f"nlgrad eval --benchmark {bench} --split {split} --n {n}"
    cmd += f" --lm {lm}" if lm else ""
    cmd += f" --policy {v['policy']}" if v["policy"] else ""
    cmd += " --policy-whole" if v["whole"] else ""
    cmd += f" --policy-placement {v['placement']}" if v["placement"] != "system" else ""
    return cmd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark")
    parser.add_argument("--lm", help="the agent model (default: nlgrad's default agent)")
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--split", default="dev", choices=("dev", "test"),
                        help="the split every variant runs on (test: for the held-out evidence, with its own --out)")
    parser.add_argument("--variant", action="append")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--readme", type=Path, help="rewrite the table between the TABLE-table markers of this "
                        "file from every row of --out (alone: run nothing)")
    parser.add_argument("--table", default="headroom", help="the markers' name in --readme (default: headroom)")
    args = parser.parse_args()
    if not args.variant:
        if not args.readme:
            raise SystemExit("give --variant (to measure) or --readme (to rewrite the table)")
        write_readme(args.readme, json.loads(args.out.read_text()), args.table)
        return
    if not args.benchmark:
        raise SystemExit("--benchmark is needed to measure")
    variants = [parse_variant(v) for v in args.variant]
    settings = load_settings().with_role_model("agent", args.lm)
    agent = settings.role("agent").model
    scores: dict[str, dict[str, float]] = {}
    rows = []
    for v in variants:
        start = time.monotonic()
        request = EvalRequest(benchmark=args.benchmark, split=args.split, n=args.n, policy=v["policy"],
                              policy_whole=v["whole"], policy_placement=v["placement"])
        result, lm = run_eval(request, settings, progress=False)
        scores[v["label"]] = {r.task_id: r.score for r in result.results}
        row = {"benchmark": args.benchmark, "agent": agent, "variant": v["label"], "split": args.split,
               "n": len(result.results),
               "mean": round(result.summary["score"]["mean"], 4),
               "ci95": [round(x, 4) for x in result.summary["score"]["ci95"]],
               "errors": result.summary["errors"], "wall_s": round(time.monotonic() - start, 1),
               "tokens": lm.ledger.total().total_tokens,
               "command": command(args.benchmark, args.n, args.lm, v, args.split),
               "run_dir": str(result.run_dir.path),
               "task_scores": {r.task_id: r.score for r in result.results}}
        base = scores[variants[0]["label"]]
        if v is not variants[0]:
            row.update(vs=variants[0]["label"], **paired_comparison(scores[v["label"]], base))
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        save(args.out, rows)
    print(markdown_table(rows))
    if args.readme:
        write_readme(args.readme, json.loads(args.out.read_text()), args.table)


def save(path: Path, rows: list[dict[str, Any]]) -> None:
    old = json.loads(path.read_text()) if path.exists() else []
    key = lambda r: (r["benchmark"], r["agent"], r["variant"], r.get("split", "dev"))  # noqa: E731
    fresh = {key(r) for r in rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([r for r in old if key(r) not in fresh] + rows, indent=1) + "\n")


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The rows as the README's headroom table, in the given order."""
    def line(r: dict[str, Any]) -> str:
        diff = (f"{r['diff']:+.3f} [{r['diff_ci95'][0]:+.3f}, {r['diff_ci95'][1]:+.3f}]" if "diff" in r else "")
        wl = f"{r['won']} / {r['lost']}" if "won" in r else ""
        return (f"| `{r['benchmark']}` | {r['agent'].split('-')[-1].upper()} | {r['variant']} | {r['n']} | "
                f"{r['mean']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] | {r.get('vs', '')} | {diff} | {wl} | "
                f"`{r['command']}` |")
    return "\n".join(["| benchmark | agent | variant | n | mean [95% CI] | paired with | paired diff [95% CI] | "
                      "won / lost | command |", "|---|---|---|---:|---|---|---|---:|---|"] + [line(r) for r in rows])


def write_readme(path: Path, rows: list[dict[str, Any]], table: str = "headroom") -> None:
    """Every row, grouped by benchmark and agent (no policy first), between the ``table`` markers of ``path``
    (``<!-- headroom-table:begin -->`` ... ``<!-- headroom-table:end -->`` by default)."""
    order = sorted(rows, key=lambda r: (r["benchmark"], r["agent"], not r["variant"].startswith("none")))
    begin, end = f"<!-- {table}-table:begin -->", f"<!-- {table}-table:end -->"
    path.write_text(replace_block(path.read_text(encoding="utf-8"), begin, end, markdown_table(order)),
                    encoding="utf-8")


if __name__ == "__main__":
    main()
