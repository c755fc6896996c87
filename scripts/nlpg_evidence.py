"""Evidence for NLPG: optimize on a benchmark with the local models, then compare no policy / human policy / NLPG on
the same test tasks. Writes the learned policy to policies/<name>/, the numbers to benchmarks/results/nlpg.json and
and prints the table (each row with the commands that produced it).

    .venv/bin/python scripts/nlpg_evidence.py --benchmark twx/coin --iterations 3 --batch 6 --val 8 --test-n 20
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import nlgrad  # noqa: F401
from nlgrad.config import load_settings
from nlgrad.evaluate import EvalRequest, run_eval
from nlgrad.installed_models import learning_settings
from nlgrad.optimize import resolve_config, run_optimize
from nlgrad.stats import paired_difference

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--benchmark", required=True)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--batch", type=int, default=6)
    p.add_argument("--val", type=int, default=8)
    p.add_argument("--test-n", type=int, default=20)
    p.add_argument("--step-cap", type=int, default=None)
    p.add_argument("--min-support", type=int, default=2)
    p.add_argument("--critic-lm", default=None, help="critic/optimizer model (default: the settings' critic)")
    args = p.parse_args()
    settings, warnings = learning_settings(load_settings(), args.critic_lm)
    for w in warnings:
        print("warning:", w, file=sys.stderr)
    name = args.benchmark.replace("/", "-") + "-nlpg"
    out = ROOT / "policies" / name
    config = resolve_config(benchmark=args.benchmark, method="nlpg", iterations=args.iterations, batch=args.batch,
                            val=args.val, test_n=0, step_cap=args.step_cap,
                            method_options={"min_support": args.min_support})
    cap = f" --step-cap {config.step_cap}" if config.step_cap else ""
    critic = f" --critic-lm {args.critic_lm}" if args.critic_lm else ""
    opt_cmd = (f"nlgrad optimize --method nlpg --benchmark {args.benchmark} --iterations {args.iterations} "
               f"--batch {args.batch} --val {args.val} --test-n 0 --min-support {args.min_support}{cap}{critic} "
               f"--out policies/{name}")
    start = time.monotonic()
    outcome = run_optimize(config, settings, out, progress=False)
    opt_wall = time.monotonic() - start
    opt_tokens = outcome.ledger.total().total_tokens
    rows, scores = [], {}
    for label, policy in (("no policy", None), ("human policy", "human"), ("NLPG", str(out))):
        req = EvalRequest(benchmark=args.benchmark, split="test", n=args.test_n, policy=policy,
                          step_cap=config.step_cap)
        t0 = time.monotonic()
        result, lm = run_eval(req, settings, progress=False)
        s = result.summary
        scores[label] = result.scores
        cmd = f"nlgrad eval --benchmark {args.benchmark} --split test --n {args.test_n}{cap}"
        if policy:
            cmd += " --policy " + ("human" if policy == "human" else f"policies/{name}")
        rows.append({"benchmark": args.benchmark, "policy": label, "n": s["n"], "mean": s["score"]["mean"],
                     "ci95": s["score"]["ci95"], "success": s["success_rate"]["mean"],
                     "eval_tokens": lm.ledger.total().total_tokens, "eval_wall_s": time.monotonic() - t0,
                     "command": cmd})
    for row in rows:
        diff = paired_difference(scores[row["policy"]], scores["no policy"])
        row["diff_vs_none"] = diff.to_dict()
    rows.append({"benchmark": args.benchmark, "policy": "NLPG optimization cost", "tokens": opt_tokens,
                 "wall_s": opt_wall, "versions": outcome.final_version, "command": opt_cmd,
                 "accepted": sum(r.accepted for r in outcome.state.history), "iterations": args.iterations})
    results_path = ROOT / "benchmarks/results/nlpg.json"
    existing = json.loads(results_path.read_text()) if results_path.exists() else []
    existing = [r for r in existing if r["benchmark"] != args.benchmark] + rows
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(existing, indent=2) + "\n")
    write_table(existing)
    for row in rows:
        print(json.dumps(row))
    return 0


def write_table(rows: list[dict]) -> None:
    lines = ["| benchmark | policy | n (test) | score [95% CI] | diff vs none [95% CI] | success | tokens | wall s | command |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "mean" in r:
            d = r["diff_vs_none"]
            lines.append(f"| `{r['benchmark']}` | {r['policy']} | {r['n']} | {r['mean']:.3f} [{r['ci95'][0]:.3f}, "
                         f"{r['ci95'][1]:.3f}] | {d['mean']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] | "
                         f"{r['success']:.3f} | {r['eval_tokens']} | {r['eval_wall_s']:.0f} | `{r['command']}` |")
        else:
            lines.append(f"| `{r['benchmark']}` | {r['policy']} ({r['accepted']} of {r['iterations']} updates "
                         f"accepted) | | | | | {r['tokens']} | {r['wall_s']:.0f} | `{r['command']}` |")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
