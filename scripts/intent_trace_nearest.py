"""Does the agent follow the nearest worked example? Read from the traces of an `nlgrad eval` run with an example policy.

    python scripts/intent_trace_nearest.py runs/EVAL_WITH_POLICY [runs/OTHER ...]

Each call of an ``intent_classify`` run shows its examples as prior user / assistant turns, the most similar last.
Per run the script splits the scored tasks by what the call was shown and prints the accuracy in each part:

- the nearest (last) example carries the gold label, or another label;
- the gold label is among the shown examples' labels, or not;
- the reply is the nearest example's label (whether right or wrong).

It reads ``results.jsonl`` (score, gold) and ``traces/`` (the messages of the call); tasks without a trace or with
an error are skipped and counted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from urllib.parse import quote


def reply_label(content: str) -> str:
    """A shown example's reply as a bare label (the program shows it as the JSON string the grammar makes)."""
    text = content.strip()
    try:
        value = json.loads(text)
    except ValueError:
        return text.lower()
    return str(value).strip().lower()


def shown_labels(trace: dict) -> list[str] | None:
    """Labels of the example turns of the trace's first module call, in the order shown (nearest last)."""
    for node in trace.get("nodes", []):
        if node.get("kind") != "module":
            continue
        messages = node.get("messages") or []
        return [reply_label(m["content"]) for m in messages[1:-1] if m.get("role") == "assistant"]
    return None


def part(rows: list[tuple[bool, float]], condition: bool) -> str:
    scores = [score for cond, score in rows if cond == condition]
    if not scores:
        return "   -   (0)"
    return f"{sum(scores) / len(scores):.3f} ({sum(1 for s in scores if s > 0)}/{len(scores)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    for run in args.runs:
        nearest, among, followed = [], [], []
        skipped = 0
        for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            path = run / "traces" / f"{quote(row['task_id'], safe='')}.json"
            if row.get("error") is not None or not path.exists():
                skipped += 1
                continue
            labels = shown_labels(json.loads(path.read_text(encoding="utf-8")))
            if not labels:
                skipped += 1
                continue
            gold = str(row["details"]["gold"]).lower()
            predicted = str(row["details"].get("predicted") or "").lower()
            score = float(row["score"])
            nearest.append((labels[-1] == gold, score))
            among.append((gold in labels, score))
            followed.append((predicted == labels[-1], score))
        n = len(nearest)
        print(f"{run}: {n} tasks with shown examples ({skipped} skipped)")
        print(f"  nearest example has the gold label: accuracy {part(nearest, True)}; another label: "
              f"{part(nearest, False)}")
        print(f"  gold label among the shown:         accuracy {part(among, True)}; not shown: {part(among, False)}")
        share = sum(1 for cond, _ in followed if cond) / n if n else 0.0
        print(f"  reply is the nearest example's label: {share:.3f} of calls")


if __name__ == "__main__":
    main()
