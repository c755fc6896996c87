"""TrainConfig: everything a companion training run depends on, validated, fingerprinted for resume.

The general options are fields of :class:`TrainConfigBase`; every advantage estimator's own options (``omega``,
``stapo_z``, ...) come from the estimator registry (:func:`nlgrad.trainer.estimators.estimator_options`) and are added
as fields by :func:`pydantic.create_model`, so :class:`TrainConfig` has one field per option of every method.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from nlgrad.errors import ConfigError
from nlgrad.trainer.estimators import METHODS, estimator_options, get_estimator, methods_declaring

# Fields that may change between a run and its resume without changing what was learned so far.
RESUMABLE_FIELDS = {"steps", "eval_n", "test_n", "device", "save_every", "keep_checkpoints", "workers",
                    "eval_step_cap", "val_n", "val_every"}


class TrainConfigBase(BaseModel):
    """The options every method shares; :class:`TrainConfig` adds the estimators' own."""

    model_config = ConfigDict(extra="forbid")

    method: Literal[METHODS] = "grpo"  # type: ignore[valid-type]
    benchmark: str
    program: str | None = None
    model: str = Field(description="HF model directory, a .gguf file, or 'tiny' (random-init test model)")
    lora: bool = True
    lora_rank: int = Field(default=16, ge=1)
    lora_alpha: int = Field(default=32, ge=1)
    lora_targets: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    gradient_checkpointing: bool = False
    seed: int = 0
    # rollouts
    steps: int = Field(default=20, ge=1, description="optimization steps (one rollout batch each)")
    tasks_per_step: int = Field(default=4, ge=1)
    group_size: int = Field(default=4, ge=2, description="G: rollouts per task")
    step_cap: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, gt=0.0)
    max_new_tokens: int | None = Field(default=None, ge=1, description="cap on a module's max_tokens")
    workers: int = Field(default=1, ge=1)
    # PPO
    lr: float = Field(default=1e-5, gt=0.0)
    weight_decay: float = Field(default=0.0, ge=0.0)
    ppo_epochs: int = Field(default=1, ge=1)
    minibatch: int = Field(default=8, ge=1, description="turns per gradient step")
    clip_eps: float = Field(default=0.2, gt=0.0)
    clip_eps_high: float | None = Field(default=None, gt=0.0)
    kl_coef: float = Field(default=0.04, ge=0.0)
    max_grad_norm: float = Field(default=1.0, gt=0.0)
    loss_agg: Literal["token-mean", "seq-mean"] = "token-mean"
    skip_zero_advantage: bool = True
    # advantages (each estimator's own options are added from the registry)
    normalize: Literal["std", "mean"] | None = Field(default=None, description="None: the method's default")
    rules: str | None = Field(default=None, description="JERP weight half: a policy directory (rule pool) whose "
                              "rules are retrieved into the prompts trained on")
    rules_k: int = Field(default=4, ge=1, description="rules retrieved per route and task")
    rules_embedder: Literal["lexical", "auto", "minilm"] = "lexical"
    # checkpoints and evaluation
    save_every: int = Field(default=1, ge=1)
    keep_checkpoints: int = Field(default=2, ge=1)
    eval_n: int = Field(default=0, ge=0, description="dev tasks evaluated in-process at the end (0: skip)")
    test_n: int = Field(default=0, ge=0, description="test tasks evaluated at the end, for compare rows (0: skip)")
    eval_step_cap: int | None = Field(default=None, ge=1)
    val_n: int = Field(default=0, ge=0, description="dev tasks evaluated every val_every steps (learning curve)")
    val_every: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _check(self) -> "TrainConfigBase":
        if self.tasks_per_step * self.group_size < 2:
            raise ValueError("a step needs at least two rollouts")
        declared = {option.name for option in get_estimator(self.method).options}
        for option in estimator_options().values():
            if option.methods_only and option.name not in declared and getattr(self, option.name) != option.default:
                raise ValueError(f"{option.name} applies to --method {' or '.join(methods_declaring(option.name))}")
        return self

    def effective_normalize(self) -> str:
        return self.normalize or get_estimator(self.method).default_normalize

    def fingerprint(self) -> str:
        """What must match for a resume (see RESUMABLE_FIELDS for what may change)."""
        data = self.model_dump(mode="json", exclude=RESUMABLE_FIELDS)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def resume_differences(self, saved: dict[str, Any]) -> list[str]:
        """``name: saved -> now`` for every option (outside RESUMABLE_FIELDS) in which the configuration ``saved``
        in a run directory differs from this one; empty when the run may resume with this configuration.

        A run written before an option existed saved no value for it: the option's default stands in, because an
        option is added with the default that keeps the earlier behaviour (e.g. ``rules=None``: no rule pool). So
        such a run resumes when the new options are left at their defaults. A saved option this version does not
        know (a newer version's, or one since removed), or a saved value it no longer accepts, is a difference."""
        unknown = sorted(set(saved) - set(type(self).model_fields))
        if unknown:
            return [f"{name}: {saved[name]!r} (an option this version does not have)" for name in unknown]
        try:
            before = type(self).model_validate(saved)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(x) for x in first["loc"]) or "options"
            return [f"{where}: {first.get('input')!r} ({first['msg']})"]
        then = before.model_dump(mode="json", exclude=RESUMABLE_FIELDS)
        now = self.model_dump(mode="json", exclude=RESUMABLE_FIELDS)
        return [f"{name}: {then.get(name)!r} -> {now[name]!r}" for name in sorted(now) if then.get(name) != now[name]]


def check_options(values: dict[str, Any], *, field: str, **fixed: Any) -> None:
    """Check trainer options given elsewhere than ``nlgrad train`` (JERP's ``trainer=``, a compare row's
    ``--method-option``s): every value valid for :class:`TrainConfig` together with ``fixed`` (what the caller
    decides); a problem is a :class:`~nlgrad.errors.ConfigError` on ``field`` naming the option."""
    try:
        TrainConfig(**{"benchmark": "(from --benchmark)", **fixed, **values})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        name = ".".join(str(x) for x in first["loc"]) or "options"
        raise ConfigError(f"trainer option {name}: {first['msg']}", field=field,
                          value=f"{name}={first.get('input')!r}") from None


def _estimator_fields() -> dict[str, Any]:
    return {option.name: (option.type, Field(default=option.default, description=option.help, **option.bounds()))
            for option in estimator_options().values()}


TrainConfig = create_model("TrainConfig", __base__=TrainConfigBase, __module__=__name__,
                           __doc__="Every option of a companion training run: the general ones and every "
                                   "estimator's own.", **_estimator_fields())
