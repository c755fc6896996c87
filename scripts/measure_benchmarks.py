"""Measure built-in benchmarks on their dev split: the floors and the agent, each row with the command that
reproduces it. Writes the rows to ``--out`` (default benchmarks/results/floors.json) and the table between the
markers in ``--readme FILE`` (default: none, no table is written; benchmarks/README.md holds the current results by hand since 2026-12-05; its old script-written tables are in docs/results/benchmarks-readme-history-2026-12-05.md).

Variants (``--variants``, comma-separated):
- ``floor``: a trivial program with no LM. Interactive TWX/ScienceWorld benchmarks: ``twx_random`` (a uniformly
  random valid action each step), labelled ``random``; tau2: ``tau2_idle_floor``; static benchmarks: ``echo_floor``
  or ``majority_floor``.
- ``alone`` (TWX/ScienceWorld): the program alone, driven by an agent that gives the same reply (``--reply``,
  default ``1``) to every call, through litellm's ``mock_response`` (no model, no server). What the program's own
  structure and game knowledge score: a learned policy's gain is judged against this floor.
- ``none``: the agent with the configured model and no policy.
- ``human``: the same with the benchmark's human-written policy.

``--program`` runs the ``alone``, ``none`` and ``human`` rows with another program than the benchmark's default
(e.g. ``react_plain``); its rows are labelled with its name.

    .venv/bin/python scripts/measure_benchmarks.py --benchmarks twx/coin,hotpotqa --n 30
    .venv/bin/python scripts/measure_benchmarks.py --benchmarks twx/twc --n 20 --variants human
    .venv/bin/python scripts/measure_benchmarks.py --benchmarks twx/coin --n 20 --variants floor,alone \\
        --out benchmarks/results/floors-interactive.json --readme ''
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402

import nlgrad  # noqa: E402, F401
from nlgrad.config import RoleConfig, Settings, load_settings  # noqa: E402
from nlgrad.evaluate import EvalRequest, run_eval  # noqa: E402
from nlgrad.runtime.protocols import SPLITS  # noqa: E402
from nlgrad.runtime.registry import load_benchmark  # noqa: E402
from nlgrad.files import replace_block  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FLOORS = {"twx": "twx_random", "sciworld": "twx_random", "hotpotqa": "echo_floor", "hover": "majority_floor",
          "locomo": "echo_floor", "ifbench": "echo_floor", "ifeval": "echo_floor", "tau2": "tau2_idle_floor"}
ALONE_FAMILIES = ("twx", "sciworld")  # interactive benchmarks whose programs carry game knowledge
BEGIN, END = "<!-- measured-table:begin -->", "<!-- measured-table:end -->"
VARIANTS = ("floor", "alone", "none", "human")
LABELS = {"floor": "floor", "alone": "program alone", "none": "no policy", "human": "human policy"}
ORDER = ("floor", "random", "program alone", "no policy", "human policy")


def split_sizes(bench) -> str:
    sizes = []
    for split in SPLITS:
        try:
            sizes.append(str(len(bench.tasks(split))))
        except Exception:  # noqa: BLE001
            sizes.append("?")
    return "/".join(sizes)


def label_of(variant: str, family: str, program: str | None) -> str:
    """A row's label: ``random`` for the floor of TWX/ScienceWorld, else the variant's; a program other than the
    benchmark's default is named in parentheses."""
    label = "random" if variant == "floor" and family in ALONE_FAMILIES else LABELS[variant]
    return f"{label} ({program})" if program and variant != "floor" else label


@contextlib.contextmanager
def constant_agent(reply: str):
    """Settings whose every role is a model that answers ``reply`` to every call (litellm's ``mock_response``), with
    a private LM cache and runs directory; litellm is patched while the block runs."""
    real = litellm.completion

    def constant(*args, **kwargs):
        kwargs["mock_response"] = reply
        return real(*args, **kwargs)

    role = RoleConfig(model="openai/constant-agent", max_tokens=16)
    with tempfile.TemporaryDirectory(prefix="nlgrad-constant-") as tmp:
        settings = Settings(roles={"agent": role, "critic": role}, cache_dir=Path(tmp) / "cache",
                            runs_dir=Path(tmp) / "runs", retries=0)
        litellm.completion = constant
        try:
            yield settings
        finally:
            litellm.completion = real


def command_for(variant: str, bid: str, n: int, program: str | None, policy: str | None, step_cap: int | None,
                reply: str) -> str:
    """The command that reproduces one row."""
    cap = f" --step-cap {step_cap}" if step_cap else ""
    if variant == "alone":
        return (f".venv/bin/python scripts/measure_benchmarks.py --benchmarks {bid} --n {n} --variants alone"
                + (f" --program {program}" if program else "") + (f" --reply {reply}" if reply != "1" else "")
                + cap)
    cmd = f"nlgrad eval --benchmark {bid} --split dev --n {n}"
    cmd += f" --program {program}" if program else ""
    cmd += f" --policy {policy}" if policy else ""
    return cmd + cap


def measure(bid: str, n: int, step_cap: int | None, settings, only: tuple[str, ...] = VARIANTS,
            program: str | None = None, reply: str = "1") -> list[dict]:
    bench = load_benchmark(bid)
    family = bid.split("/")[0]
    rows = []
    for variant in (v for v in VARIANTS if v in only):
        if variant == "floor" and family not in FLOORS or variant == "alone" and family not in ALONE_FAMILIES:
            continue
        run_program = FLOORS[family] if variant == "floor" else program
        policy = "human" if variant == "human" else None
        request = EvalRequest(benchmark=bid, split="dev", n=n, program=run_program, policy=policy, step_cap=step_cap,
                              workers=1 if variant in ("floor", "alone") else None)
        start = time.monotonic()
        if variant in ("floor", "alone"):  # (a floor makes no LM call: no model is needed, no server started)
            with constant_agent(reply) as constant_settings:
                result, _lm = run_eval(request, constant_settings, progress=False)
        else:
            result, _lm = run_eval(request, settings, progress=False)
        wall = time.monotonic() - start
        s = result.summary
        rows.append({"benchmark": bid, "splits": split_sizes(bench),
                     "variant": label_of(variant, family, program if variant != "floor" else None),
                     "program": run_program or bench.default_program,
                     **({"reply": reply} if variant == "alone" else {}),
                     "n": s["n"], "mean": s["score"]["mean"], "ci95": s["score"]["ci95"],
                     "success": s["success_rate"]["mean"], "errors": s["errors"],
                     "s_per_task": wall / max(1, s["n"]),
                     "command": command_for(variant, bid, n, run_program, policy, step_cap, reply),
                     "measured": time.strftime("%Y-%m-%d")})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def _order(row: dict) -> tuple:
    base = row["variant"].split(" (")[0]
    return (row["benchmark"], ORDER.index(base) if base in ORDER else len(ORDER), row["variant"])


def to_markdown(rows: list[dict]) -> str:
    lines = ["| benchmark | train/dev/test | variant | n | dev score [95% CI] | success | errors | s/task | command |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=_order):
        lines.append(f"| `{r['benchmark']}` | {r['splits']} | {r['variant']} | {r['n']} | {r['mean']:.3f} "
                     f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] | {r['success']:.3f} | {r['errors']} | "
                     f"{r['s_per_task']:.1f} | `{r['command']}` |")
    return "\n".join(lines)


def write_readme_table(readme: Path, rows: list[dict]) -> None:
    text = readme.read_text() if readme.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    readme.write_text(replace_block(text, BEGIN, END, to_markdown(rows)))


def merge(existing: list[dict], rows: list[dict]) -> list[dict]:
    """``existing`` with the rows of the same benchmark and variant replaced by ``rows`` (a TWX/ScienceWorld
    ``random`` row also replaces that benchmark's older ``floor`` row, its earlier label)."""
    done = {(r["benchmark"], r["variant"]) for r in rows}
    done |= {(b, "floor") for b, v in done if v == "random"}
    return [r for r in existing if (r["benchmark"], r["variant"]) not in done] + rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", required=True, help="comma-separated benchmark ids")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--step-cap", type=int, default=None)
    parser.add_argument("--variants", default="floor,none,human",
                        help=f"comma-separated subset of {','.join(VARIANTS)}; rows of other variants are kept")
    parser.add_argument("--program", default=None, help="the program of the alone/none/human rows (default: the "
                                                        "benchmark's own)")
    parser.add_argument("--reply", default="1", help="the constant reply of the alone rows")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/floors.json"))
    parser.add_argument("--readme", default="", help="a file whose markers get the table (default: none)")
    args = parser.parse_args()
    only = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in only if v not in VARIANTS]
    if unknown:
        parser.error(f"--variants: unknown {', '.join(unknown)} (choose from {', '.join(VARIANTS)})")
    settings = load_settings() if set(only) & {"none", "human"} else Settings()
    out = Path(args.out)
    existing = json.loads(out.read_text()) if out.exists() else []
    for bid in args.benchmarks.split(","):
        rows = measure(bid.strip(), args.n, args.step_cap, settings, only, args.program, args.reply)
        existing = merge(existing, rows)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(existing, indent=2) + "\n")
        if args.readme:  # after each benchmark: a killed run keeps finished rows
            write_readme_table(Path(args.readme), existing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
