"""A trainer row of ``nlgrad compare``: ``train:<method>`` trains the learner model beside the text methods.

``nlgrad compare --methods none,nlpg,train:grpo,train:gigpo --method-option train:gigpo.model=PATH ...`` runs every
registered estimator (:func:`nlgrad.trainer.estimators.compare_rows`) as a row: the same benchmark, program, seed,
step cap and first ``--test-n`` test tasks as the text methods, and ``--budget-rollouts`` training episodes (``steps``
= the budget / (``tasks_per_step`` x ``group_size``), at least one step). The row's ``--method-option``s are
:class:`~nlgrad.trainer.config.TrainConfig` options (``model`` is required; ``lora``, ``lr``, ``group_size``,
``tasks_per_step``, ``max_new_tokens``, the estimator's own, ...); what the comparison decides is not among them
(:data:`SET_BY_COMPARE`). The trainer writes its run under ``<seed dir>/train/`` (resumable) and the row's
``external.json`` (:func:`~nlgrad.trainer.evaluation.external_record`), which the comparison reads as that seed's
record; an ``external.json`` placed there by a run elsewhere (``nlgrad train --external`` on a GPU) is read instead.

This module imports no torch: :func:`run_row` imports the trainer when it trains (the extra ``train``), as the
``nlgrad train`` command does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nlgrad.errors import ConfigError
from nlgrad.trainer.config import TrainConfig, check_options
from nlgrad.trainer.estimators import COMPARE_PREFIX, row_estimator

FIELD = "--method-option"
# TrainConfig options that the comparison decides: where each one comes from.
SET_BY_COMPARE = {
    "method": "the row's name (train:<method>)", "benchmark": "--benchmark", "program": "--program",
    "seed": "--seeds", "steps": "--budget-rollouts (steps = budget / (tasks_per_step x group_size))",
    "test_n": "--test-n", "step_cap": "--step-cap", "eval_step_cap": "--step-cap", "workers": "--workers",
}


def _method(row: str) -> str:
    try:
        estimator = row_estimator(row)
    except ValueError as exc:
        raise ConfigError(str(exc), field="--methods", value=row) from None
    if estimator is None:
        raise ConfigError(f"a trainer row is named {COMPARE_PREFIX}<method>", field="--methods", value=row)
    return estimator.name


def check_row_options(row: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` of the row ``row`` when each is a valid trainer option that the comparison does not decide; else a
    ConfigError naming it (``model`` may be missing: a row read from a placed ``external.json`` needs none)."""
    method = _method(row)
    for name in sorted(options):
        if name in SET_BY_COMPARE:
            raise ConfigError(f"the trainer option {name!r} is set by the comparison ({SET_BY_COMPARE[name]})",
                              field=FIELD, value=f"{row}.{name}")
    check_options(options, field=FIELD, method=method, model=options.get("model", "tiny"))
    return dict(options)


def row_config(row: str, options: dict[str, Any], *, benchmark: str, program: str | None, seed: int,
               budget_rollouts: int, test_n: int, step_cap: int | None, workers: int | None) -> TrainConfig:
    """The TrainConfig of one (row, seed) of a comparison: the row's options plus what the comparison decides."""
    options = check_row_options(row, options)
    if not options.get("model"):
        raise ConfigError(f"a trainer row needs the model it trains: --method-option {row}.model=PATH (an HF model "
                          "directory, a .gguf file, or 'tiny')", field=FIELD, value=f"{row}.model")
    config = TrainConfig(**options, method=_method(row), benchmark=benchmark, program=program, seed=seed,
                         test_n=test_n, step_cap=step_cap, eval_step_cap=step_cap, workers=workers or 1)
    steps = max(1, budget_rollouts // (config.tasks_per_step * config.group_size))
    return config.model_copy(update={"steps": steps})


def run_row(config: TrainConfig, out_dir: Path, *, console=None) -> dict[str, Any]:
    """Train ``config`` into ``out_dir`` (resuming what is there), evaluate the final weights on the first
    ``test_n`` test tasks, and return the row's ``external.json`` record."""
    try:
        from nlgrad.trainer.evaluation import external_record
        from nlgrad.trainer.loop import Trainer
    except ImportError as exc:
        if exc.name not in ("torch", "transformers", "peft"):
            raise
        raise ConfigError(f"a trainer row needs the optional extra: pip install 'nlgrad[train]' ({exc.name} is "
                          "missing)", field="--methods", value=COMPARE_PREFIX + config.method) from None
    trainer = Trainer(config, out_dir, console=console)
    outcome = trainer.finish(trainer.run())
    note = (f"companion trainer {config.method} ({trainer.learner_model.source}, "
            f"{'LoRA' if config.lora else 'full'}, {config.steps} steps of {config.tasks_per_step} tasks x "
            f"{config.group_size})")
    return external_record(out_dir, outcome.test_result, model_dir=outcome.final_dir, note=note)
