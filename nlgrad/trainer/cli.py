"""``nlgrad train``: the companion weight trainer (optional extra ``train``). torch is imported inside the command,
so ``nlgrad --help`` works without it.

The command's options are the general ones (:func:`_general_options`' signature) plus every option of every registered
advantage estimator (:func:`nlgrad.trainer.estimators.estimator_options`), each with its own flag, default and help; a
method added to the registry brings its flags with it."""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any, Literal, Optional, get_origin

import typer

from nlgrad.trainer.estimators import ESTIMATORS, estimator_options

METHOD_HELP = ("The advantage estimator: " + ", ".join(ESTIMATORS) + ". "
               + " ".join(estimator.summary for estimator in ESTIMATORS.values()))


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


def _general_options(
    method: str = typer.Option("grpo", "--method", help=METHOD_HELP),
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
                                            "row here (e.g. DIR/train:grpo/seed0/external.json); needs --test-n."),
    eval_step_cap: Optional[int] = typer.Option(None, "--eval-step-cap", help="Step cap of the evaluation."),
    program: Optional[str] = typer.Option(None, "--program", help="Agent program (default: the benchmark's)."),
):
    """Never called: its signature declares the options every method shares."""


def _estimator_parameter(option) -> inspect.Parameter:
    """A typer option of an estimator option (a ``Literal`` is a string flag; TrainConfig checks the choice)."""
    annotation = str if get_origin(option.type) is Literal else option.type
    return inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                             default=typer.Option(option.default, option.flag, help=option.help))


def train_signature() -> inspect.Signature:
    """``nlgrad train``'s parameters: the general options, with the estimators' options after ``--temperature``."""
    general = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
               for p in inspect.signature(_general_options, eval_str=True).parameters.values()]
    at = [p.name for p in general].index("temperature") + 1
    return inspect.Signature(general[:at] + [_estimator_parameter(o) for o in estimator_options().values()]
                             + general[at:])


def config_values(values: dict[str, Any]) -> dict[str, Any]:
    """The TrainConfig values of the command's parameters (all but where to write, under their config names)."""
    out = {k: v for k, v in values.items() if k not in ("out_dir", "external", "grad_ckpt")}
    out["gradient_checkpointing"] = values["grad_ckpt"]
    return out


def register(app: typer.Typer) -> None:
    from nlgrad.cli_common import err, handles_errors, out

    def train_cmd(**values: Any):
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

        config = _config(**config_values(values))
        method, benchmark, model, lora = values["method"], values["benchmark"], values["model"], values["lora"]
        external, test_n, out_dir = values["external"], values["test_n"], values["out_dir"]
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

    train_cmd.__signature__ = train_signature()
    app.command("train")(handles_errors(train_cmd))
