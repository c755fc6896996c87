"""Print the interactive floors table (random / program alone / no policy per TWX and ScienceWorld benchmark), or
write it into ``--readme FILE``, from ``benchmarks/results/floors-interactive.json``, between the ``interactive-floors`` markers.

    .venv/bin/python scripts/floors_table.py [--rows FILE] [--readme FILE]

Rows come from ``scripts/measure_benchmarks.py ... --out benchmarks/results/floors-interactive.json --readme ''``
(variants ``floor``, ``alone``, ``none``; ``--program react_plain`` for the plain program's rows); the table shows the
latest row of each benchmark x column and lists the commands behind them.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from nlgrad.files import replace_block

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- interactive-floors:begin -->", "<!-- interactive-floors:end -->"
COLUMNS = [("random", "random"), ("program alone", "program alone (constant reply 1)"),
           ("program alone (react_plain)", "react_plain alone"), ("no policy", "no policy (0.5B agent)"),
           ("no policy (react_plain)", "react_plain, no policy")]


def table(rows: list[dict]) -> str:
    cells: dict[str, dict[str, dict]] = {}
    for r in rows:
        cells.setdefault(r["benchmark"], {})[r["variant"]] = r
    shown = [(key, title) for key, title in COLUMNS if any(key in v for v in cells.values())]
    out = ["| benchmark (dev) | " + " | ".join(t for _, t in shown) + " |",
           "|---|" + "---:|" * len(shown)]
    for bench, by in cells.items():
        values = []
        for key, _ in shown:
            r = by.get(key)
            values.append(f"{r['mean']:.3f} (n={r['n']})" if r else "")
        out.append(f"| `{bench}` | " + " | ".join(values) + " |")
    templates = sorted({re.sub(r"--n \d+", "--n N", r["command"].replace(r["benchmark"], "ID")) for r in rows})
    out += ["", "Commands, per column (ID = the benchmark, N = its n above; `sciworld/melt` has 7 dev tasks):", "", "```bash", *templates, "```"]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=Path, default=ROOT / "benchmarks/results/floors-interactive.json")
    parser.add_argument("--readme", type=Path, help="a file whose markers get the table (default: print it)")
    args = parser.parse_args()
    body = table(json.loads(args.rows.read_text(encoding="utf-8")))
    if args.readme is None:
        print(body)
        return
    text = replace_block(args.readme.read_text(encoding="utf-8"), BEGIN, END, body)
    args.readme.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
