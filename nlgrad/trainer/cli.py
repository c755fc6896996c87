"""``nlgrad train``: the companion weight trainer (optional extra ``train``). torch is imported inside the command,
so ``nlgrad --help`` works without it."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Optional

import typer


def _out_dir(method: str, benchmark: str, model: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{method}-{benchmark}-{Path(model).stem}").strip("-")
    return Path("runs") / f"train-{slug}"


def _config(**values):
    """A validated TrainConfig; a bad value becomes a ConfigError naming the option."""
    from pydantic import ValidationError

    from nlgrad.errors import ConfigError
    from nlgrad.trainer.config import TrainConfig

    try:
        return TrainConfig(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first["loc"]) or "options"
        raise ConfigError(first["msg"], field=f"--{field.replace('_', '-')}", value=first.get("input")) from None


def register(app: typer.Typer) -> None:
    from nlgrad.cli_common import err, handles_errors, out

    @app.command("train")
    @handles_errors
    def train_cmd(
        method: str = typer.Option("grpo", "--method", help="grpo, gigpo, progpo, cigpo, hidifftir, milegpo, "
                                    "tigpo, actguide, tapo, stapo or iapo."),
        benchmark: str = typer.Option(..., "--benchmark", "-b", help="Benchmark id, e.g. twx/coin or hotpotqa."),
        model: str = typer.Option(..., "--model", help="HF model directory or .gguf file on disk ('tiny': tests)."),
        lora: bool = typer.Option(True, "--lora/--full", help="Train LoRA adapters (default) or all weights."),
        device: str = typer.Option("auto", "--device", help="auto, cuda or cpu."),
        out_dir: Optional[Path] = typer.Option(None, "--out", help="Run directory (resumes a run written there)."),
        steps: int = typer.Option(20, "--steps", help="Optimization steps."),
        tasks_per_step: int = typer.Option(4, "--tasks-per-step", help="Train tasks per step."),
        group_size: int = typer.Option(4, "--group-size", "-G", help="Rollouts per task (G)."),
        step_cap: Optional[int] = typer.Option(None, "--step-cap", help="Max environment steps per episode."),
        lr: float = typer.Option(1e-5, "--lr", help="Learning rate (AdamW)."),
        kl_coef: float = typer.Option(0.04, "--kl-coef", help="KL penalty to the frozen reference."),
        clip_eps: float = typer.Option(0.2, "--clip-eps", help="PPO clip range."),
        ppo_epochs: int = typer.Option(1, "--ppo-epochs", help="Passes over each rollout batch."),
        minibatch: int = typer.Option(8, "--minibatch", help="Turns per gradient step."),
        temperature: float = typer.Option(1.0, "--temperature", help="Sampling temperature of rollouts."),
        omega: float = typer.Option(1.0, "--omega", help="GiGPO: weight of the step advantage."),
        gamma: float = typer.Option(0.95, "--gamma", help="Discount of step returns, per environment step."),
        progpo_step: bool = typer.Option(False, "--progpo-step", help="ProGPO's step level (novel-state visits "
                                         "per step); with gigpo, as step rewards of all-failed groups."),
        difficulty_weight: float = typer.Option(1.0, "--difficulty-weight", help="HiDiffTIR: group difficulty "
                                                "scale (1 + w * (1 - mean score))."),
        route_failure_weight: float = typer.Option(1.0, "--route-failure-weight", help="HiDiffTIR: route scale "
                                                   "(1 + w * the route's failure rate in the batch)."),
        milestone_coef: float = typer.Option(1.0, "--milestone-coef", help="MileGPO: weight of the milestone/trap "
                                             "shaping return."),
        milestone_prior: float = typer.Option(1.0, "--milestone-prior", help="MileGPO: reliability prior (a "
                                              "candidate seen by n episodes keeps n / (n + prior) of its value)."),
        revisit_share: float = typer.Option(0.25, "--revisit-share", help="TIGPO: share of a step's task slots "
                                            "that revisit earlier tasks."),
        guide_hint: str = typer.Option("", "--guide-hint", help="ActGuide-RL: plan hint of the re-rolls of "
                                       "all-zero groups (default: the task's plan, else a generic plan)."),
        tapo_coef: float = typer.Option(0.1, "--tapo-coef", help="TAPO: weight of the next-observation loss."),
        tapo_max_tokens: int = typer.Option(64, "--tapo-max-tokens", help="TAPO: observation tokens predicted."),
        stapo_z: float = typer.Option(1.0, "--stapo-z", help="STAPO: entropy |z| in the anchor group above which "
                                      "a turn is an outlier."),
        stapo_scale: float = typer.Option(0.5, "--stapo-scale", help="STAPO: an outlier's trajectory-aware reward "
                                          "(factor on its episode's GRPO advantage)."),
        stapo_penalty: float = typer.Option(0.5, "--stapo-penalty", help="STAPO: trajectory-independent penalty "
                                            "of every outlier turn."),
        iapo_coef: float = typer.Option(1.0, "--iapo-coef", help="IAPO: weight of supported/failed uses in a "
                                        "turn's routing weight."),
        rules: Optional[str] = typer.Option(None, "--rules", help="JERP weight half: policy directory (rule pool) "
                                            "whose rules are retrieved into the prompts trained on."),
        rules_k: int = typer.Option(4, "--rules-k", help="Rules retrieved per route and task."),
        rules_embedder: str = typer.Option("lexical", "--rules-embedder", help="lexical, auto or minilm."),
        normalize: Optional[str] = typer.Option(None, "--normalize", help="std or mean (default: the method's)."),
        lora_rank: int = typer.Option(16, "--lora-rank", help="LoRA rank."),
        dtype: str = typer.Option("auto", "--dtype", help="auto, float32, bfloat16 or float16."),
        grad_ckpt: bool = typer.Option(False, "--gradient-checkpointing", help="Trade compute for memory."),
        max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens", help="Cap on a module's max_tokens."),
        workers: int = typer.Option(1, "--workers", "-w", help="Parallel episode threads."),
        seed: int = typer.Option(0, "--seed", help="Seed (task sampler, sampling, init)."),
        save_every: int = typer.Option(1, "--save-every", help="Checkpoint every N steps."),
        eval_n: int = typer.Option(20, "--eval-n", help="Dev tasks evaluated in-process at the end (0: skip)."),
        test_n: int = typer.Option(0, "--test-n", help="Test tasks evaluated at the end (for nlgrad compare)."),
        val_n: int = typer.Option(0, "--val-n", help="Dev tasks evaluated every --val-every steps (curve)."),
        val_every: int = typer.Option(0, "--val-every", help="Steps between validation evaluations (0: off)."),
        external: Optional[Path] = typer.Option(None, "--external", help="Write nlgrad compare's external.json "
                                                "row here (e.g. DIR/grpo/seed0/external.json); needs --test-n."),
        eval_step_cap: Optional[int] = typer.Option(None, "--eval-step-cap", help="Step cap of the evaluation."),
        program: Optional[str] = typer.Option(None, "--program", help="Agent program (default: the benchmark's)."),
    ):
        """Train a local model's weights with GRPO/GiGPO/ProGPO/CIGPO/HiDiffTIR/MileGPO/TIGPO/ActGuide-RL/TAPO/
        STAPO/IAPO on nlgrad's benchmarks (resumable)."""
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as exc:
            from nlgrad.errors import ConfigError

            raise ConfigError(f"nlgrad train needs the optional extra: pip install 'nlgrad[train]' ({exc.name} "
                              "is missing)") from None
        from nlgrad.trainer.loop import Trainer

        config = _config(method=method, benchmark=benchmark, program=program, model=model, lora=lora,
                            lora_rank=lora_rank, device=device, dtype=dtype, gradient_checkpointing=grad_ckpt,
                            seed=seed, steps=steps, tasks_per_step=tasks_per_step, group_size=group_size,
                            step_cap=step_cap, temperature=temperature, max_new_tokens=max_new_tokens,
                            workers=workers, lr=lr, ppo_epochs=ppo_epochs, minibatch=minibatch, clip_eps=clip_eps,
                            kl_coef=kl_coef, normalize=normalize, omega=omega, gamma=gamma, progpo_step=progpo_step,
                            difficulty_weight=difficulty_weight, route_failure_weight=route_failure_weight,
                            milestone_coef=milestone_coef, milestone_prior=milestone_prior,
                            revisit_share=revisit_share, guide_hint=guide_hint,
                            tapo_coef=tapo_coef, tapo_max_tokens=tapo_max_tokens, stapo_z=stapo_z,
                            stapo_scale=stapo_scale, stapo_penalty=stapo_penalty, iapo_coef=iapo_coef, rules=rules,
                            rules_k=rules_k, rules_embedder=rules_embedder, save_every=save_every,
                            eval_n=eval_n, test_n=test_n, val_n=val_n, val_every=val_every,
                            eval_step_cap=eval_step_cap)
        if external is not None and test_n < 1:
            from nlgrad.errors import ConfigError

            raise ConfigError("--external needs a test-split evaluation: pass --test-n N (N = compare's --test-n)",
                              field="--test-n", value=test_n)
        target = out_dir or _out_dir(method, benchmark, model)
        trainer = Trainer(config, target, console=err)
        outcome = trainer.finish(trainer.run(), progress=sys.stderr.isatty())
        last = outcome.curves[-1] if outcome.curves else {}
        out.print(f"[bold]train {method} on {benchmark}[/] ({trainer.learner_model.source}, "
                  f"{'LoRA' if lora else 'full'}, {trainer.learner_model.device})")
        out.print(f"  steps: {outcome.steps_done} (resumed from {outcome.resumed_from}), "
                  f"{outcome.timing.get('steps_per_s', 0):.4f} steps/s")
        if last:
            out.print(f"  last step: rollout score {last['score_mean']:.3f}, loss {last['loss']:.4f}, "
                      f"kl {last['kl']:.4f}, {last['tokens_per_s']} tok/s, peak memory {last['peak_memory_mb']} MB")
        for split, summary in (("dev", outcome.eval_summary),
                               ("test", outcome.test_result.summary if outcome.test_result else None)):
            if summary:
                score = summary["score"]
                out.print(f"  eval {split} (n={summary['n']}): score {score['mean']:.3f} "
                          f"[{score['ci95'][0]:.3f}, {score['ci95'][1]:.3f}] -> {target / f'eval-{split}'}")
        if external is not None:
            from nlgrad.files import write_json_atomic
            from nlgrad.trainer.evaluation import external_record

            note = f"companion trainer {method} ({trainer.learner_model.source}, {'LoRA' if lora else 'full'})"
            write_json_atomic(external, external_record(target, outcome.test_result, model_dir=outcome.final_dir,
                                                        note=note))
            out.print(f"  compare row: {external}")
        out.print(f"  curves: {target / 'curves.jsonl'}; merged model: {outcome.final_dir}")
