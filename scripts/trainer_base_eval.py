"""The companion trainer's starting point: the untrained learner model on the same test tasks as a compare's rows.

A trainer row of ``nlgrad compare`` scores the trained weights in-process (Hugging Face, greedy, no decoding
grammar), while the text rows run the GGUF agent through its server; the two bases differ. This script scores the
base weights the trainer started from, on the comparison's own test tasks and the same way the trainer row is
scored, and pairs every trainer row of the comparison with it: what training moved.

    .venv/bin/python scripts/trainer_base_eval.py --compare reports/banking77-trainer [--model MODEL] \
        [--max-new-tokens N] [--run-dir /tmp/runs/base]

``--model`` and ``--max-new-tokens`` default to the trainer rows' own options (``train:NAME.model``,
``train:NAME.max_new_tokens`` in the comparison's settings) when every row has the same.
Prints the base score and each trainer row's paired difference from it (95% CI, won/lost).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from nlgrad.compare.harness import is_trainer_row
from nlgrad.stats import bootstrap_ci, paired_comparison


def trainer_rows(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Test scores by task id of every trainer row (``train:<method>``) of a comparison's results.json."""
    return {r["method"]: r["test"] for r in results["records"] if is_trainer_row(r["method"]) and r.get("test")}


def rows_option(results: dict[str, Any], rows: list[str], name: str) -> Any:
    """The option ``name`` that every row in ``rows`` was run with, or None when they differ or one lacks it."""
    options = results["settings"].get("method_options", {})
    values = {json.dumps(options.get(row, {}).get(name)) for row in rows}
    return json.loads(values.pop()) if len(values) == 1 else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compare", type=Path, required=True, help="an nlgrad compare output folder")
    parser.add_argument("--model", default=None, help="the trainer rows' model (HF directory or .gguf)")
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--run-dir", type=Path, default=None)
    args = parser.parse_args(argv)

    results_path = args.compare / "results.json"
    results = json.loads(results_path.read_text(encoding="utf-8"))
    rows = trainer_rows(results)
    if not rows:
        raise SystemExit(f"{results_path}: no trainer row (train:<method>) with test scores")
    model = args.model or rows_option(results, sorted(rows), "model")
    if not model:
        raise SystemExit(f"{results_path}: the trainer rows name different models (or none): pass --model")
    max_new_tokens = args.max_new_tokens or rows_option(results, sorted(rows), "max_new_tokens")

    from nlgrad.trainer.evaluation import evaluate_learner_model
    from nlgrad.trainer.learner_model import load_learner_model

    settings, task_ids = results["settings"], results["test_task_ids"]
    learner = load_learner_model(model, lora=False, need_reference=False)
    run = evaluate_learner_model(learner, benchmark=settings["benchmark"], split="test", n=len(task_ids),
                                 program=settings.get("program"), run_dir=args.run_dir, model_name="hf/base",
                                 max_tokens_cap=max_new_tokens)
    base = {r.task_id: r.score for r in run.results}
    if sorted(base) != sorted(task_ids):
        raise SystemExit("the base run's test tasks are not the comparison's")
    est = bootstrap_ci(list(base.values()))
    print(f"base {model}: {est.mean:.3f} [{est.lo:.3f}, {est.hi:.3f}] on {len(base)} test tasks")
    for method, scores in sorted(rows.items()):
        pair = paired_comparison(scores, base)
        lo, hi = pair["diff_ci95"]
        print(f"{method} vs base: {pair['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] won {pair['won']} lost {pair['lost']} "
              f"(n={len(set(scores) & set(base))})")


if __name__ == "__main__":
    main()
