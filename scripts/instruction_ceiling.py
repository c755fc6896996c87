"""How much one lesson could add on an IFEval/IFBench run: per instruction type, the score gained if every failed
instruction of that type were followed and nothing else changed (a lesson's ceiling).

    .venv/bin/python scripts/instruction_ceiling.py runs/<an nlgrad eval run of ifeval or ifbench> [--top 12]

A task scores the fraction of its instructions followed, so fixing one failed instruction of a task with ``k``
instructions adds ``1 / (k n)`` to the mean over ``n`` tasks. Counting instructions (words, sentences,
paragraphs, letters, bullets, placeholders, ...) are summed apart: a rule restates them, it does not make a small
model count.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

COUNTING = frozenset({
    "length_constraints:number_words", "length_constraints:number_sentences", "length_constraints:number_paragraphs",
    "length_constraints:nth_paragraph_first_word", "keywords:letter_frequency", "keywords:frequency",
    "detectable_format:number_bullet_lists", "detectable_content:number_placeholders",
    "detectable_format:number_highlighted_sections", "change_case:capital_word_frequency",
})


def ceilings(results: list[dict]) -> tuple[float, Counter, Counter]:
    """``(mean score, {type: ceiling gain}, {type: tasks failing it})`` over the tasks of a results.jsonl."""
    n = len(results)
    gain: Counter = Counter()
    failing: Counter = Counter()
    for result in results:
        instructions = (result.get("details") or {}).get("instructions") or []
        for instruction in instructions:
            if not instruction["followed"]:
                gain[instruction["id"]] += 1 / len(instructions) / n
                failing[instruction["id"]] += 1
    mean = sum(float(r.get("score") or 0.0) for r in results) / n if n else float("nan")
    return mean, gain, failing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    lines = (args.run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    results = [json.loads(line) for line in lines if line.strip()]
    mean, gain, failing = ceilings(results)
    missing = sum(gain.values())
    print(f"{args.run_dir}: n={len(results)} mean {mean:.3f}, missing {missing:.3f}; counting instructions "
          f"{sum(v for k, v in gain.items() if k in COUNTING):.3f} of it")
    print(f"{'instruction type':46s} {'tasks failing':>13s} {'ceiling':>8s}")
    for kind, value in gain.most_common(args.top):
        mark = " (counting)" if kind in COUNTING else ""
        print(f"{kind:46s} {failing[kind]:13d} {value:+8.3f}{mark}")


if __name__ == "__main__":
    main()
