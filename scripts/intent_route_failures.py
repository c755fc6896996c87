"""Where an ``intent_route`` eval fails: the area route or the intent route. Read from an `nlgrad eval` run directory.

    python scripts/intent_route_failures.py runs/ROUTE_EVAL [--vs runs/OTHER_EVAL ...]

Prints the run's accuracy, the share of tasks whose area (the first route's reply, ``output.group``) is the gold
label's area in the program's own grouping (:class:`~nlgrad.programs.intent_route.IntentRouteProgram`), and the
failures split into wrong area / right area but wrong intent. Each ``--vs`` run (any program on the same benchmark
and split) is paired with it task by task over the tasks both scored (:func:`nlgrad.stats.paired_comparison`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nlgrad.programs.intent_route import IntentRouteProgram
from nlgrad.runtime.registry import load_benchmark
from nlgrad.stats import paired_comparison


def read_results(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]


def area_split(rows: list[dict], group_of: dict[str, str]) -> dict:
    """Tasks whose area was right, and the failures by route."""
    area_right = [r["output"]["group"] == group_of[r["details"]["gold"]] for r in rows]
    failed = [r["score"] < 1 for r in rows]
    return {"n": len(rows), "accuracy": sum(r["score"] for r in rows) / len(rows),
            "area_right": sum(area_right) / len(rows),
            "wrong_area": sum(not a for a in area_right),
            "right_area_wrong_intent": sum(a and f for a, f in zip(area_right, failed))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="an `nlgrad eval --program intent_route` run directory")
    parser.add_argument("--vs", type=Path, action="append", default=[], help="another eval run to pair with")
    args = parser.parse_args(argv)
    config = json.loads((args.run / "config.json").read_text(encoding="utf-8"))
    group_of = IntentRouteProgram(load_benchmark(config["benchmark"])).group_of
    rows = read_results(args.run)
    split = area_split(rows, group_of)
    print(f"{args.run}: n={split['n']} accuracy {split['accuracy']:.3f}, area right {split['area_right']:.3f}; "
          f"failures: wrong area {split['wrong_area']}, right area wrong intent {split['right_area_wrong_intent']}")
    scores = {r["task_id"]: r["score"] for r in rows}
    for other in args.vs:
        vs = paired_comparison(scores, {r["task_id"]: r["score"] for r in read_results(other)})
        lo, hi = vs["diff_ci95"]
        print(f"  vs {other}: {vs['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] won {vs['won']} lost {vs['lost']}")


if __name__ == "__main__":
    main()
