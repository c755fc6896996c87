"""What an agent route actually replied in saved eval runs: the most common raw replies (e.g. the same list number at
every step), the verbs of the actions it chose, and how many episodes ran to the step cap.
No LM calls; reads ``runs/<eval>/traces`` and ``results.jsonl``.

    .venv/bin/python scripts/agent_reply_stats.py runs/20261201-011001-eval-twx-cooking-dev-218ee1 [more runs]
    .venv/bin/python scripts/agent_reply_stats.py --route tau2.act runs/*-eval-tau2-retail-dev-*
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from nlgrad.methods.run_artifacts import load_traces
from nlgrad.runtime.rundir import RunDir


def reply_stats(run: Path, route: str, top: int = 4) -> dict:
    replies, verbs = Counter(), Counter()
    for trace in load_traces(run).values():
        for _, node in trace.graph.nodes(data=True):
            if node.get("kind") != "module" or node.get("route") != route:
                continue
            replies[" ".join(str(node.get("output", "")).split())[:40]] += 1
            parsed = node.get("parsed") or {}
            action = parsed.get("action") or parsed.get("tool") or parsed.get("kind") or ""
            verbs[str(action).split(" ")[0]] += 1
    results = RunDir(run).load_results(include_errors=True)
    steps = [r.get("steps") for r in results.values() if r.get("steps") is not None]
    config = json.loads((run / "config.json").read_text(encoding="utf-8")) if (run / "config.json").is_file() else {}
    cap = config.get("step_cap")
    total = sum(replies.values()) or 1
    return {"run": str(run), "policy": config.get("policy"), "calls": sum(replies.values()),
            "top_replies": [(r, round(n / total, 2)) for r, n in replies.most_common(top)],
            "top_actions": [(v, round(n / total, 2)) for v, n in verbs.most_common(top)],
            "episodes": len(results), "at_step_cap": sum(1 for s in steps if cap and s >= cap), "step_cap": cap}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="eval run folders (runs/<timestamp>-eval-...)")
    p.add_argument("--route", default="twx.act")
    p.add_argument("--top", type=int, default=4)
    args = p.parse_args()
    for run in map(Path, args.runs):
        print(json.dumps(reply_stats(run, args.route, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
