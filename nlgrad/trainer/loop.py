"""The companion trainer's loop: rollouts -> advantages -> PPO-clip updates -> log, checkpoint; resumable.

One optimization step:
1. draw ``tasks_per_step`` train tasks with nlgrad's seeded minibatch sampler (seed, step) — the same draws an
   ``nlgrad optimize`` run with that seed makes, and the same after a resume;
2. roll out ``group_size`` episodes per task with the benchmark's program (:mod:`nlgrad.trainer.rollout`);
3. per-turn advantages by the method's estimator from the registry (:mod:`nlgrad.trainer.estimators`);
4. recompute old and reference log-probs, then ``ppo_epochs`` passes of minibatch PPO-clip + KL updates;
5. append a line to ``curves.jsonl``; checkpoint every ``save_every`` steps.
After the last step: the merged model is saved under ``final/`` and, with ``eval_n > 0``, evaluated in-process.
"""

from __future__ import annotations

import json
import math
import random
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from rich.console import Console

from nlgrad.errors import ConfigError
from nlgrad.files import write_json_atomic
from nlgrad.runtime.protocols import step_cap_for
from nlgrad.runtime.ray_executor import executor_for
from nlgrad.runtime.registry import load_benchmark, load_program
from nlgrad.runtime.rule_retrieval import rule_pool_hooks
from nlgrad.runtime.sampler import SeededMinibatchSampler
from nlgrad.trainer import checkpoint as ckpt
from nlgrad.trainer.actguide import guide_zero_groups
from nlgrad.trainer.advantages_tigpo import TaskHistory, revisit_slots, revisit_tasks
from nlgrad.trainer.aux_next_observation import auxiliary_pass, next_observation_pairs
from nlgrad.trainer.batch import completion_logprobs, pad_batch
from nlgrad.trainer.config import TrainConfig
from nlgrad.trainer.credit import InfoGainScorer, assign_advantages, question_and_gold
from nlgrad.trainer.env_states import RecordingBenchmark, StateLog
from nlgrad.trainer.estimators import get_estimator
from nlgrad.trainer.evaluation import evaluate_learner_model, save_merged
from nlgrad.trainer.gold_plans import plan_source_for
from nlgrad.trainer.hf_lm import LearnerLM
from nlgrad.trainer.loss import ppo_clip_loss
from nlgrad.trainer.learner_model import LearnerModel, load_learner_model
from nlgrad.trainer.rollout import EpisodeRollout, Turn, collect_groups


@dataclass
class TrainOutcome:
    out_dir: Path
    steps_done: int
    resumed_from: int
    curves: list[dict[str, Any]] = field(default_factory=list)
    eval_summary: dict[str, Any] | None = None
    test_result: Any = None  # RunResult of the test-split evaluation (test_n > 0)
    final_dir: Path | None = None
    timing: dict[str, float] = field(default_factory=dict)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % (2 ** 32))
    except ImportError:  # pragma: no cover
        pass


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2 ** 20
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB
    except Exception:  # noqa: BLE001  # pragma: no cover
        return 0.0


class Trainer:
    def __init__(self, config: TrainConfig, out_dir: Path, *, learner_model: LearnerModel | None = None,
                 console: Console | None = None, on_step: Callable[[dict[str, Any]], None] | None = None,
                 benchmark: Any = None, program: Any = None):
        """``learner_model``: an already loaded model (tests, JERP's weight half), else ``config.model`` is loaded.
        ``benchmark`` / ``program``: already loaded objects for ``config.benchmark`` / ``config.program`` (JERP's
        weight half passes its workspace's), else they are loaded by id."""
        self.config, self.out_dir = config, Path(out_dir)
        self.console = console or Console(stderr=True)
        self.on_step = on_step
        self.benchmark = benchmark if benchmark is not None else load_benchmark(config.benchmark)
        self.program = program if program is not None else load_program(
            config.program or self.benchmark.default_program, benchmark=self.benchmark)
        self.train_tasks = self.benchmark.tasks("train")
        if any(t.split == "test" for t in self.train_tasks):  # pragma: no cover - defensive
            raise ConfigError("training never sees the test split", field="benchmark", value=config.benchmark)
        self.estimator = get_estimator(config.method)  # the method's advantage estimator, from the registry
        if self.estimator.needs_gold_answer:
            question_and_gold(self.train_tasks[0])  # fails early on a benchmark without gold answers
        self.step_cap = step_cap_for(self.benchmark, config.step_cap)
        self.sampler = SeededMinibatchSampler(config.seed)
        _seed_everything(config.seed)
        need_ref = config.kl_coef > 0 or self.estimator.needs_gold_answer  # CIGPO scores with the reference
        self.learner_model = learner_model or load_learner_model(
            config.model, device=config.device, dtype=config.dtype, lora=config.lora, lora_rank=config.lora_rank,
            lora_alpha=config.lora_alpha, lora_targets=config.lora_targets, need_reference=need_ref,
            gradient_checkpointing=config.gradient_checkpointing, seed=config.seed)
        self.params = self.learner_model.trainable_parameters()
        if not self.params:
            raise ConfigError("the model has no trainable parameters", field="--model", value=config.model)
        self.optimizer = torch.optim.AdamW(self.params, lr=config.lr, weight_decay=config.weight_decay)
        self.lm = LearnerLM(self.learner_model, name=f"hf/{Path(config.model).name}", mode="sample",
                            temperature=config.temperature, max_tokens_cap=config.max_new_tokens)
        self.state_log = StateLog()  # the environments' own state keys (GiGPO anchors, ProGPO's novel states)
        # JERP's weight half: a rule pool retrieved into every rollout's (and evaluation's) prompts
        self.rule_hooks = rule_pool_hooks(config.rules, k=config.rules_k, embedder=config.rules_embedder)
        self.executor = executor_for(None, benchmark=RecordingBenchmark(self.benchmark, self.state_log),
                                     program=self.program, lm=self.lm, workers=1, step_cap=self.step_cap,
                                     progress=False, label="train", **self.rule_hooks)
        self.scorer = InfoGainScorer(self.learner_model) if self.estimator.needs_gold_answer else None
        self.ckpt_dir = self.out_dir / "checkpoints"
        self.curves_path = self.out_dir / "curves.jsonl"
        self.task_history = TaskHistory()  # TIGPO: per-task transition graphs, exploration groups (checkpointed)
        self.tasks_by_id = {t.id: t for t in self.train_tasks}
        # ActGuide-RL: train tasks' gold action sequences (the environment's own solver), read when first needed
        self.plan_source = plan_source_for(self.benchmark) if self.estimator.guides_zero_groups else None

    @property
    def policy(self) -> LearnerModel:
        """Deprecated name of :attr:`learner_model` (in nlgrad, "policy" is the policy memory)."""
        warnings.warn("Trainer.policy is deprecated; use Trainer.learner_model", DeprecationWarning, stacklevel=2)
        return self.learner_model

    # ---- resume ---------------------------------------------------------------------------------------------
    def _resume(self) -> int:
        config_path = self.out_dir / "config.json"
        if config_path.exists():
            saved = json.loads(config_path.read_text(encoding="utf-8"))
            if saved.get("fingerprint") != self.config.fingerprint():
                # an older run's fingerprint lacks options added since: it resumes if they are at their defaults
                changed = (self.config.resume_differences(saved["config"]) if isinstance(saved.get("config"), dict)
                           else ["(the saved configuration has no options to compare)"])
                if changed:
                    raise ConfigError("this output directory holds a run with a different configuration ("
                                      + "; ".join(changed) + "); use another --out or the same options (only "
                                      "steps, eval and device may change)", field="--out", value=str(self.out_dir))
        self.out_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(config_path, {"fingerprint": self.config.fingerprint(),
                                        "config": self.config.model_dump(mode="json"),
                                        "model": self.learner_model.source})
        latest = ckpt.latest_checkpoint(self.ckpt_dir)
        if latest is None:
            return 0
        state = ckpt.load_checkpoint(latest, self.learner_model.model, self.optimizer)
        self.task_history = TaskHistory.from_dict(state.get("task_stats"))
        if self.plan_source is not None:  # the same gold plans as before (TWX's solver wanders differently each time)
            self.plan_source.cache.update(state.get("gold_plans") or {})
        self._truncate_curves(state["step"])
        self.console.print(f"[trainer] resumed from {latest.name} (step {state['step']})")
        return int(state["step"])

    def _truncate_curves(self, step: int) -> None:
        """Drop log lines of steps after the checkpoint (a run killed between its log line and its checkpoint)."""
        if not self.curves_path.exists():
            return
        keep = []
        for line in self.curves_path.read_text(encoding="utf-8").splitlines():
            try:
                if json.loads(line).get("step", 0) <= step:
                    keep.append(line)
            except json.JSONDecodeError:
                continue
        self.curves_path.write_text("".join(k + "\n" for k in keep), encoding="utf-8")

    # ---- one step -------------------------------------------------------------------------------------------
    def _old_and_ref_logprobs(self, batches) -> None:
        self.learner_model.model.eval()
        with torch.no_grad():
            for b in batches:
                b["old"] = completion_logprobs(self.learner_model.model, b["batch"], self.config.temperature)
                if self.config.kl_coef > 0:
                    with self.learner_model.reference() as ref:
                        b["ref"] = completion_logprobs(ref, b["batch"], self.config.temperature)

    def _make_batches(self, turns: list[Turn]) -> list[dict[str, Any]]:
        pad = self.learner_model.tokenizer.pad_token_id
        size = self.config.minibatch
        out = []
        for i in range(0, len(turns), size):
            chunk = turns[i:i + size]
            out.append({"batch": pad_batch([(t.prompt_ids, t.completion_ids) for t in chunk], pad,
                                           self.learner_model.device),
                        "adv": torch.tensor([t.advantage for t in chunk], dtype=torch.float32,
                                            device=self.learner_model.device)})
        return out

    def step_tasks(self, step: int) -> tuple[list, int]:
        """The step's tasks (the seeded sampler's draw; TIGPO replaces its last slots with revisits of earlier
        tasks) and the number of revisits."""
        cfg = self.config
        tasks = self.sampler.sample(self.train_tasks, cfg.tasks_per_step, step)
        if not self.estimator.revisits:
            return tasks, 0
        slots = revisit_slots(cfg.revisit_share, len(tasks))
        revisits = revisit_tasks(self.task_history, [t.id for t in tasks], slots, seed=cfg.seed, step=step)
        return tasks[:len(tasks) - len(revisits)] + [self.tasks_by_id[i] for i in revisits], len(revisits)

    def train_step(self, step: int) -> dict[str, Any]:
        cfg = self.config
        t0 = time.monotonic()
        tasks, revisits = self.step_tasks(step)
        self.learner_model.model.eval()
        groups = collect_groups(self.executor, self.lm, tasks, cfg.group_size, workers=cfg.workers,
                                state_log=self.state_log)
        method_stats: dict[str, Any] = {"revisited_tasks": revisits} if self.estimator.revisits else {}
        if self.estimator.guides_zero_groups:
            method_stats.update(guide_zero_groups(self.executor, self.lm, groups, plans=self.plan_source,
                                                  hint=cfg.guide_hint, state_log=self.state_log))
        t_rollout = time.monotonic() - t0
        revisit_ids = frozenset(t.id for t in tasks[len(tasks) - revisits:]) if revisits else frozenset()
        return self.learn(groups, step, tasks=tasks, method_stats=method_stats, t0=t0, t_rollout=t_rollout,
                          revisit_ids=revisit_ids)

    def learn(self, groups: list[list[EpisodeRollout]], step: int, *, tasks: list, method_stats: dict[str, Any],
              t0: float, t_rollout: float, revisit_ids: frozenset[str] = frozenset()) -> dict[str, Any]:
        """Advantages by the configured method, then the PPO passes, on rollout ``groups`` (G episodes of a task
        each); returns the step's log record. ``train_step`` calls it on its own rollouts (``revisit_ids``: TIGPO's
        revisited tasks); JERP's weight half (:mod:`nlgrad.trainer.weight_learner`) on the rollouts JERP's iteration
        read."""
        cfg = self.config
        method_stats.update(assign_advantages(groups, cfg, step, self.scorer, task_history=self.task_history,
                                              revisit_ids=revisit_ids))
        episodes = [ep for group in groups for ep in group]
        turns = [t for ep in episodes for t in ep.turns if t.completion_ids]
        train_turns = [t for t in turns if abs(t.advantage) > 1e-8] if cfg.skip_zero_advantage else turns
        losses, kls, clips, grad_norms, trained_tokens, aux_losses = [], [], [], [], 0, []
        aux_pairs = (next_observation_pairs(turns, self.learner_model.encode_text, cfg.tapo_max_tokens)
                     if self.estimator.next_observation_loss else [])
        if train_turns:
            batches = self._make_batches(train_turns)
            self._old_and_ref_logprobs(batches)
            self.learner_model.model.train()
            for _ in range(cfg.ppo_epochs):
                for b in batches:
                    logp = completion_logprobs(self.learner_model.model, b["batch"], cfg.temperature)
                    loss, stats = ppo_clip_loss(logp, b["old"], b["adv"], b["batch"].completion_mask,
                                                ref_logp=b.get("ref"), clip_eps=cfg.clip_eps,
                                                clip_eps_high=cfg.clip_eps_high, kl_coef=cfg.kl_coef,
                                                agg=cfg.loss_agg)
                    if not torch.isfinite(loss):
                        raise FloatingPointError(f"non-finite loss at step {step}: {stats}")
                    self.optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    grad_norms.append(float(torch.nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm)))
                    self.optimizer.step()
                    losses.append(stats.loss)
                    kls.append(stats.kl)
                    clips.append(stats.clip_fraction)
                    trained_tokens += b["batch"].tokens
                if aux_pairs:  # TAPO: the next-observation pass alternates with each PPO pass
                    aux_losses += auxiliary_pass(self.learner_model.model, self.optimizer, self.params, aux_pairs,
                                                 pad_id=self.learner_model.tokenizer.pad_token_id,
                                                 device=self.learner_model.device,
                                                 minibatch=cfg.minibatch, coef=cfg.tapo_coef,
                                                 max_grad_norm=cfg.max_grad_norm)
            self.learner_model.model.eval()
        elif aux_pairs:  # TAPO without a PPO update this step: the next-observation pass still runs
            self.learner_model.model.train()
            aux_losses += auxiliary_pass(self.learner_model.model, self.optimizer, self.params, aux_pairs,
                                         pad_id=self.learner_model.tokenizer.pad_token_id,
                                         device=self.learner_model.device, minibatch=cfg.minibatch,
                                         coef=cfg.tapo_coef, max_grad_norm=cfg.max_grad_norm)
            self.learner_model.model.eval()
        wall = time.monotonic() - t0
        sampled = sum(len(t.completion_ids) for t in turns)
        prompt_tokens = sum(len(t.prompt_ids) for t in turns)
        record = {
            "step": step + 1, "method": cfg.method, "tasks": [t.id for t in tasks],
            "episodes": len(episodes), "turns": len(turns), "trained_turns": len(train_turns),
            "score_mean": sum(ep.score for ep in episodes) / len(episodes),
            "success_rate": sum(ep.success for ep in episodes) / len(episodes),
            "mean_steps": sum(ep.steps for ep in episodes) / len(episodes),
            "errors": sum(ep.error is not None for ep in episodes),
            "advantage_abs_mean": (sum(abs(t.advantage) for t in turns) / len(turns)) if turns else 0.0,
            "loss": _mean(losses), "kl": _mean(kls), "clip_fraction": _mean(clips),
            "grad_norm": _mean(grad_norms), "updates": len(losses),
            "sampled_tokens": sampled, "prompt_tokens": prompt_tokens, "trained_tokens": trained_tokens,
            "rollout_s": round(t_rollout, 3), "wall_s": round(wall, 3),
            "tokens_per_s": round((sampled + prompt_tokens + trained_tokens * cfg.ppo_epochs) / wall, 1) if wall else 0,
            "peak_memory_mb": round(_peak_memory_mb(self.learner_model.device), 1),
            **method_stats,
        }
        if self.estimator.next_observation_loss:
            record.update(next_obs_loss=_mean(aux_losses), next_obs_pairs=len(aux_pairs))
        errors = [ep.error for ep in episodes if ep.error]
        if errors and len(errors) == len(episodes):
            raise RuntimeError(f"every rollout of step {step + 1} failed; first error: {errors[0]}")
        if errors:
            record["first_error"] = errors[0]
        return record

    def save_checkpoint(self, step: int, **state: Any) -> Path:
        """Checkpoint ``step`` completed steps (weights, optimizer, RNG, TIGPO's history, ActGuide-RL's gold plans,
        ``state``)."""
        cfg = self.config
        plans = {"gold_plans": dict(self.plan_source.cache)} if self.plan_source is not None else {}
        return ckpt.save_checkpoint(self.ckpt_dir, step, self.learner_model.model, self.optimizer,
                                    {"method": cfg.method, "fingerprint": cfg.fingerprint(),
                                     "task_stats": self.task_history.to_dict(), **plans, **state},
                                    keep=cfg.keep_checkpoints)

    # ---- the run --------------------------------------------------------------------------------------------
    def run(self) -> TrainOutcome:
        cfg = self.config
        start_step = self._resume()
        curves: list[dict[str, Any]] = []
        t_start = time.monotonic()
        try:
            for step in range(start_step, cfg.steps):
                record = self.train_step(step)
                if cfg.val_n and cfg.val_every and (step + 1) % cfg.val_every == 0:
                    record["val_score"] = self._evaluate("dev", cfg.val_n, None).summary["score"]["mean"]
                with open(self.curves_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record, sort_keys=True) + "\n")
                curves.append(record)
                if self.on_step:
                    self.on_step(record)
                self.console.print(f"[trainer] step {record['step']}/{cfg.steps} score {record['score_mean']:.3f} "
                                   f"loss {record['loss']:.4f} kl {record['kl']:.4f} "
                                   f"turns {record['trained_turns']}/{record['turns']} {record['wall_s']:.1f}s")
                if (step + 1) % cfg.save_every == 0 or step + 1 == cfg.steps:
                    self.save_checkpoint(step + 1)
        finally:
            self.executor._close_envs()  # the executor pools one environment per thread; close them
            if self.plan_source is not None:
                self.plan_source.close()
        train_s = time.monotonic() - t_start
        outcome = TrainOutcome(out_dir=self.out_dir, steps_done=cfg.steps, resumed_from=start_step, curves=curves)
        outcome.timing = {"train_s": round(train_s, 3),
                          "steps_per_s": round(len(curves) / train_s, 4) if curves and train_s else 0.0}
        return outcome

    def _evaluate(self, split: str, n: int, run_dir: Path | None, progress: bool = False):
        cfg = self.config
        return evaluate_learner_model(
            self.learner_model, benchmark=cfg.benchmark, split=split, n=n, program=cfg.program,
            step_cap=cfg.eval_step_cap or cfg.step_cap, run_dir=run_dir,
            model_name=f"hf/{cfg.method}-{Path(cfg.model).name}", max_tokens_cap=cfg.max_new_tokens,
            trainer_info={"method": cfg.method, "model": self.learner_model.source, "lora": cfg.lora,
                          "seed": cfg.seed, "out_dir": str(self.out_dir)},
            console=self.console, progress=progress, rule_hooks=self.rule_hooks)

    def finish(self, outcome: TrainOutcome, *, save_final: bool = True, progress: bool = False) -> TrainOutcome:
        """Save the merged model; evaluate it in-process on ``eval_n`` dev and ``test_n`` test tasks."""
        cfg = self.config
        if save_final:
            outcome.final_dir = save_merged(self.learner_model, self.out_dir / "final")
        if cfg.eval_n > 0:
            outcome.eval_summary = self._evaluate("dev", cfg.eval_n, self.out_dir / "eval-dev", progress).summary
        if cfg.test_n > 0:
            outcome.test_result = self._evaluate("test", cfg.test_n, self.out_dir / "eval-test", progress)
        return outcome


def _mean(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else 0.0


def train(config: TrainConfig, out_dir: Path, *, console: Console | None = None,
          learner_model: LearnerModel | None = None, evaluate: bool = True, save_final: bool = True) -> TrainOutcome:
    trainer = Trainer(config, out_dir, console=console, learner_model=learner_model)
    outcome = trainer.run()
    if evaluate or save_final:
        trainer.finish(outcome, save_final=save_final)
    return outcome
