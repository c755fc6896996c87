"""Measure every built-in benchmark on its dev split: trivial floor, the agent program with no policy, and the same
with the human-written policy. Writes benchmarks/results/floors.json and the table between the markers in
benchmarks/README.md. Each row records the exact command that reproduces it.

    .venv/bin/python scripts/measure_benchmarks.py --benchmarks twx/coin,hotpotqa --n 30
    .venv/bin/python scripts/measure_benchmarks.py --benchmarks twx/twc --n 20 --variants human
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
from nlgrad.runtime.protocols import SPLITS
from nlgrad.runtime.registry import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
FLOORS = {"twx": "twx_random", "sciworld": "twx_random", "hotpotqa": "echo_floor", "hover": "majority_floor",
          "locomo": "echo_floor", "ifbench": "echo_floor", "ifeval": "echo_floor", "tau2": "tau2_idle_floor"}
BEGIN, END = "<!-- measured-table:begin -->", "<!-- measured-table:end -->"


def split_sizes(bench) -> str:
    sizes = []
    for split in SPLITS:
        try:
            sizes.append(str(len(bench.tasks(split))))
        except Exception:  # noqa: BLE001
            sizes.append("?")
    return "/".join(sizes)


VARIANTS = ("floor", "none", "human")


def measure(bid: str, n: int, step_cap: int | None, settings, only: tuple[str, ...] = VARIANTS) -> list[dict]:
    bench = load_benchmark(bid)
    family = bid.split("/")[0]
    variants = {"floor": ("floor", FLOORS.get(family), None), "none": ("no policy", None, None),
                "human": ("human policy", None, "human")}
    rows = []
    for label, program, policy in (variants[v] for v in VARIANTS if v in only):
        if label == "floor" and program is None:
            continue
        request = EvalRequest(benchmark=bid, split="dev", n=n, program=program, policy=policy, step_cap=step_cap)
        cmd = f"nlgrad eval --benchmark {bid} --split dev --n {n}"
        cmd += f" --program {program}" if program else ""
        cmd += f" --policy {policy}" if policy else ""
        cmd += f" --step-cap {step_cap}" if step_cap else ""
        start = time.monotonic()
        result, _lm = run_eval(request, settings, progress=False)
        wall = time.monotonic() - start
        s = result.summary
        rows.append({"benchmark": bid, "splits": split_sizes(bench), "variant": label, "n": s["n"],
                     "mean": s["score"]["mean"], "ci95": s["score"]["ci95"], "success": s["success_rate"]["mean"],
                     "errors": s["errors"], "s_per_task": wall / max(1, s["n"]), "command": cmd})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def to_markdown(rows: list[dict]) -> str:
    lines = ["| benchmark | train/dev/test | variant | n | dev score [95% CI] | success | errors | s/task | command |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['benchmark']}` | {r['splits']} | {r['variant']} | {r['n']} | {r['mean']:.3f} "
                     f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] | {r['success']:.3f} | {r['errors']} | "
                     f"{r['s_per_task']:.1f} | `{r['command']}` |")
    return "\n".join(lines)


def write_readme_table(readme: Path, rows: list[dict]) -> None:
    text = readme.read_text() if readme.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    order = ["floor", "no policy", "human policy"]
    ordered = sorted(rows, key=lambda r: (r["benchmark"], order.index(r["variant"])))
    readme.write_text(f"{head}{BEGIN}\n{to_markdown(ordered)}\n{END}{tail}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", required=True, help="comma-separated benchmark ids")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--step-cap", type=int, default=None)
    parser.add_argument("--variants", default="floor,none,human",
                        help="comma-separated subset of floor,none,human; rows of other variants are kept")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/floors.json"))
    parser.add_argument("--readme", default=str(ROOT / "benchmarks/README.md"))
    args = parser.parse_args()
    settings = load_settings()
    out = Path(args.out)
    existing = json.loads(out.read_text()) if out.exists() else []
    only = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in only if v not in VARIANTS]
    if unknown:
        parser.error(f"--variants: unknown {', '.join(unknown)} (choose from {', '.join(VARIANTS)})")
    for bid in args.benchmarks.split(","):
        rows = measure(bid.strip(), args.n, args.step_cap, settings, only)
        done = {r["variant"] for r in rows}
        existing = [r for r in existing if r["benchmark"] != bid.strip() or r["variant"] not in done] + rows
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(existing, indent=2) + "\n")
        write_readme_table(Path(args.readme), existing)  # after each benchmark: a killed run keeps finished rows
    return 0


if __name__ == "__main__":
    sys.exit(main())
