"""TrainConfig: everything a companion training run depends on, validated, fingerprinted for resume."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

METHODS = ("grpo", "gigpo", "progpo", "cigpo", "hidifftir", "milegpo", "tigpo", "actguide", "tapo", "stapo", "iapo")

# Fields that may change between a run and its resume without changing what was learned so far.
RESUMABLE_FIELDS = {"steps", "eval_n", "test_n", "device", "save_every", "keep_checkpoints", "workers",
                    "eval_step_cap", "val_n", "val_every"}


class TrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: Literal["grpo", "gigpo", "progpo", "cigpo", "hidifftir", "milegpo", "tigpo", "actguide", "tapo", "stapo",
                    "iapo"] = "grpo"
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
    # advantages
    normalize: Literal["std", "mean"] | None = Field(default=None, description="None: the method's default")
    omega: float = Field(default=1.0, ge=0.0, description="GiGPO step-advantage weight")
    gamma: float = Field(default=0.95, ge=0.0, le=1.0, description="discount per environment step")
    progpo_step: bool = Field(default=False, description="ProGPO step level (novel-state visits per step); with "
                              "gigpo: novel-state visits as step rewards of all-failed groups")
    difficulty_weight: float = Field(default=1.0, ge=0.0, description="HiDiffTIR: weight of group difficulty")
    route_failure_weight: float = Field(default=1.0, ge=0.0, description="HiDiffTIR: weight of route failure rate")
    milestone_coef: float = Field(default=1.0, ge=0.0, description="MileGPO: weight of milestone/trap shaping")
    milestone_prior: float = Field(default=1.0, ge=0.0, description="MileGPO: reliability prior; a candidate seen by "
                                   "n episodes keeps n / (n + prior) of its outcome confidence (0: uncalibrated)")
    revisit_share: float = Field(default=0.25, ge=0.0, le=1.0, description="TIGPO: share of a step's task slots "
                                 "that revisit tasks trained on before")
    guide_hint: str = Field(default="", description="ActGuide-RL: the plan hint of re-rolls ('' : the default "
                            "plan, or the task's own plan when its gold has one)")
    tapo_coef: float = Field(default=0.1, ge=0.0, description="TAPO: weight of the next-observation loss")
    tapo_max_tokens: int = Field(default=64, ge=1, description="TAPO: observation tokens predicted per turn")
    stapo_z: float = Field(default=1.0, ge=0.0, description="STAPO: |z| of a turn's entropy in its anchor group "
                           "above which the turn is an outlier")
    stapo_scale: float = Field(default=0.5, ge=0.0, description="STAPO: trajectory-aware reward of an outlier turn, "
                               "as a factor on its episode's GRPO advantage")
    stapo_penalty: float = Field(default=0.5, ge=0.0, description="STAPO: trajectory-independent penalty "
                                 "subtracted from every outlier turn's advantage")
    iapo_coef: float = Field(default=1.0, ge=0.0, description="IAPO: weight of a turn's supported/failed uses in "
                             "its routing weight")
    rules: str | None = Field(default=None, description="JERP weight half: a policy directory (rule pool) whose "
                              "rules are retrieved into the prompts trained on")
    rules_k: int = Field(default=4, ge=1, description="rules retrieved per route and task")
    rules_embedder: Literal["lexical", "auto", "minilm"] = "lexical"
    ig_weight_start: float = Field(default=1.0, ge=0.0)
    ig_weight_end: float = Field(default=0.1, ge=0.0)
    ig_schedule: Literal["linear", "cosine", "constant"] = "linear"
    # checkpoints and evaluation
    save_every: int = Field(default=1, ge=1)
    keep_checkpoints: int = Field(default=2, ge=1)
    eval_n: int = Field(default=0, ge=0, description="dev tasks evaluated in-process at the end (0: skip)")
    test_n: int = Field(default=0, ge=0, description="test tasks evaluated at the end, for compare rows (0: skip)")
    eval_step_cap: int | None = Field(default=None, ge=1)
    val_n: int = Field(default=0, ge=0, description="dev tasks evaluated every val_every steps (learning curve)")
    val_every: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _check(self) -> "TrainConfig":
        if self.tasks_per_step * self.group_size < 2:
            raise ValueError("a step needs at least two rollouts")
        if self.progpo_step and self.method not in ("progpo", "gigpo"):
            raise ValueError("progpo_step applies to --method progpo or gigpo")
        return self

    def effective_normalize(self) -> str:
        if self.normalize:
            return self.normalize
        return "mean" if self.method in ("gigpo", "tigpo") else "std"

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
