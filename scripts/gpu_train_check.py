"""GPU check of the companion trainer: a short real training run, then the numbers that matter.

Runs ``nlgrad.trainer`` (multi-turn TWX rollouts through nlgrad's program, PPO-clip + KL updates, checkpoints) on
CUDA for a few steps, evaluates the result in-process on dev tasks, and prints one ``RESULT`` line:
steps/s, tokens/s (rollout prompt+sampled tokens and trained tokens, per wall second), peak GPU memory and the eval
score; the same numbers go to ``$OUT/gpu_train_check.json`` (with the curves) when ``$OUT`` is set.

    python3 scripts/gpu_train_check.py --model /path/to/hf_model_dir        # LoRA on the user's weights
    python3 scripts/gpu_train_check.py                                      # random:1024x24 (271M), full FT

Weights come from the given path only (HF directory or .gguf); nothing is downloaded. Without a path a randomly
initialized 271M Llama measures throughput and memory (its score is the program's own fallback behaviour).

Then (``--jerp-iterations``, default 1; 0 skips it) JERP's weight half on the same device: ``nlgrad optimize --method
jerp`` with the same model as its trainer (a fresh copy), ``--batch`` = tasks per step, G = group size, the
reflector off (``max_reflect=0``: no LM call leaves the machine; the pool changes by presence votes only) and
``gate=none``; it reports the iterations done, their wall time, updates, whether the losses were finite and the
weight checkpoint written (``jerp_*`` keys). A failure there is reported as ``jerp_error`` and exits 1.
Use scripts/gpu_train_check.sh on a bare GPU machine: it installs the carried wheels and nlgrad first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.environ.get("MODEL") or "random:1024x24")
    ap.add_argument("--method", default=os.environ.get("METHOD", "gigpo"))
    ap.add_argument("--benchmark", default=os.environ.get("BENCHMARK", "twx/coin"))
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 6)))
    ap.add_argument("--tasks-per-step", type=int, default=4)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--step-cap", type=int, default=8)
    ap.add_argument("--eval-n", type=int, default=int(os.environ.get("EVAL_N", 8)))
    ap.add_argument("--lora", choices=["auto", "yes", "no"], default="auto",
                    help="auto: LoRA on real weights, full fine-tuning on a random model")
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--minibatch", type=int, default=16)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="/tmp/nlgrad-gpu-train-check")
    ap.add_argument("--jerp-iterations", type=int, default=int(os.environ.get("JERP_ITERATIONS", 1)),
                    help="iterations of optimize --method jerp with this model as trainer afterwards (0: skip)")
    args = ap.parse_args()

    import torch

    from nlgrad.trainer.config import TrainConfig
    from nlgrad.trainer.loop import Trainer

    random_model = args.model == "tiny" or args.model.startswith("random:")
    lora = {"yes": True, "no": False}.get(args.lora, not random_model)
    if args.lr is not None:
        lr = args.lr
    else:  # random weights learn fast; real weights: LoRA 2e-5, full fine-tuning 1e-6
        lr = 1e-4 if random_model else (2e-5 if lora else 1e-6)
    print(f"torch {torch.__version__}, cuda available {torch.cuda.is_available()}"
          + (f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""), flush=True)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    config = TrainConfig(method=args.method, benchmark=args.benchmark, model=args.model, lora=lora, device=args.device,
                         steps=args.steps, tasks_per_step=args.tasks_per_step, group_size=args.group_size,
                         step_cap=args.step_cap, lr=lr, minibatch=args.minibatch, eval_n=args.eval_n,
                         eval_step_cap=args.step_cap, save_every=args.steps, seed=0)
    t0 = time.monotonic()
    trainer = Trainer(config, out)
    load_s = time.monotonic() - t0
    params = sum(p.numel() for p in trainer.learner_model.model.parameters())
    trainable = sum(p.numel() for p in trainer.learner_model.trainable_parameters())
    print(f"model: {trainer.learner_model.source}; {params / 1e6:.1f}M params, {trainable / 1e6:.2f}M trainable "
          f"({'LoRA' if lora else 'full'}), dtype {next(trainer.learner_model.model.parameters()).dtype}, "
          f"loaded in {load_s:.1f}s", flush=True)
    score_before = float("nan")
    if args.eval_n > 0:  # the same dev tasks, the same greedy evaluation, before any step (LoRA starts as a no-op)
        from nlgrad.trainer.evaluation import evaluate_learner_model

        before = evaluate_learner_model(trainer.learner_model, benchmark=args.benchmark, split="dev", n=args.eval_n,
                                        step_cap=args.step_cap, model_name="hf/before")
        score_before = before.summary["score"]["mean"]
    if trainer.learner_model.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    outcome = trainer.run()
    t_eval = time.monotonic()
    trainer.finish(outcome, save_final=False)
    eval_s = time.monotonic() - t_eval
    curves = outcome.curves
    wall = sum(c["wall_s"] for c in curves)
    rollout_tokens = sum(c["prompt_tokens"] + c["sampled_tokens"] for c in curves)
    trained_tokens = sum(c["trained_tokens"] for c in curves)
    peak_gb = (torch.cuda.max_memory_allocated() / 2 ** 30) if trainer.learner_model.device.type == "cuda" else float("nan")
    score = outcome.eval_summary["score"]["mean"] if outcome.eval_summary else float("nan")
    result = {
        "model": trainer.learner_model.source, "method": args.method, "benchmark": args.benchmark, "lora": lora,
        "params_m": round(params / 1e6, 2), "trainable_m": round(trainable / 1e6, 3), "steps": len(curves),
        "episodes_per_step": args.tasks_per_step * args.group_size, "step_cap": args.step_cap,
        "steps_per_s": round(len(curves) / wall, 4) if wall else 0.0,
        "tokens_per_s": round((rollout_tokens + trained_tokens) / wall, 1) if wall else 0.0,
        "rollout_tokens": rollout_tokens, "trained_tokens": trained_tokens,
        "rollout_s": round(sum(c["rollout_s"] for c in curves), 2), "train_wall_s": round(wall, 2),
        "peak_memory_gb": round(peak_gb, 3), "eval_n": args.eval_n, "eval_score_before": score_before,
        "eval_score": score,
        "eval_s": round(eval_s, 2), "train_score_first": curves[0]["score_mean"] if curves else None,
        "train_score_last": curves[-1]["score_mean"] if curves else None,
        "loss_finite": all(c["loss"] == c["loss"] for c in curves),
    }
    if args.jerp_iterations > 0:
        del trainer, outcome  # free the first model before JERP loads its own copy
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        result.update(jerp_check(args, lora=lora, lr=lr))
    keys = ("steps_per_s", "tokens_per_s", "peak_memory_gb", "eval_score_before", "eval_score", "train_wall_s",
            "rollout_s", "jerp_iterations", "jerp_wall_s", "jerp_updates", "jerp_checkpoint", "jerp_error")
    print("RESULT " + " ".join(f"{k}={result[k]}" for k in keys if k in result), flush=True)
    print(json.dumps(result, indent=2))
    if os.environ.get("OUT"):
        dest = Path(os.environ["OUT"])
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "gpu_train_check.json").write_text(json.dumps({"result": result, "curves": curves}, indent=2))
    return 0 if result["loss_finite"] and "jerp_error" not in result and result.get("jerp_loss_finite", True) else 1


def jerp_check(args, *, lora: bool, lr: float) -> dict:
    """``--jerp-iterations`` iterations of JERP with this model as its trainer (see the module docstring)."""
    import math

    from nlgrad.config import RoleConfig, Settings
    from nlgrad.methods.base import OptimizeConfig
    from nlgrad.optimize import run_optimize
    from nlgrad.trainer.checkpoint import latest_checkpoint

    out = Path(args.out + "-jerp")
    shutil.rmtree(out, ignore_errors=True)
    trainer = {"model": args.model, "method": args.method, "lora": lora, "device": args.device,
               "group_size": args.group_size, "lr": lr, "minibatch": args.minibatch}
    unused = RoleConfig(model="openai/unused")  # max_reflect=0: the critic / optimizer roles are never called
    settings = Settings(roles={"agent": unused, "critic": unused, "optimizer": unused}, use_cache=False,
                        runs_dir=out / "runs")
    config = OptimizeConfig(method="jerp", benchmark=args.benchmark, iterations=args.jerp_iterations,
                            batch=args.tasks_per_step, val=1, test_n=0, step_cap=args.step_cap,
                            method_options={"trainer": trainer, "gate": "none", "max_reflect": 0,
                                            "embedder": "lexical"})
    t0 = time.monotonic()
    try:
        outcome = run_optimize(config, settings, out, progress=False)
        records = [json.loads((out / "run" / f"iter-{i:04d}" / "weights.json").read_text())
                   for i in range(1, outcome.state.completed + 1)]
    except Exception as exc:  # noqa: BLE001 - reported in the RESULT line, after the trainer's numbers
        return {"jerp_error": f"{type(exc).__name__}: {exc}"[:300].replace(" ", "_")}
    ckpt = latest_checkpoint(out / "run" / "weights" / "checkpoints")
    return {"jerp_iterations": outcome.state.completed, "jerp_wall_s": round(time.monotonic() - t0, 2),
            "jerp_updates": sum(r.get("updates", 0) for r in records),
            "jerp_episodes": sum(r.get("episodes", 0) for r in records),
            "jerp_loss_finite": all(math.isfinite(r.get("loss", 0.0)) for r in records),
            "jerp_checkpoint": ckpt.name if ckpt else None}


if __name__ == "__main__":
    sys.exit(main())
