"""JERP's weight half: the companion trainer takes a weight step on the trajectories each JERP iteration reads.

``nlgrad optimize --method jerp --method-option trainer=trainer.toml`` (or an inline JSON table,
``trainer={"model": "tiny", "lr": 0.001}``): JERP keeps the options and the trainer injects a
:class:`TrainerWeightLearner` built from them (``nlgrad optimize`` sets it as JERP's ``weight_learner``; JERP's
:class:`~nlgrad.methods.jerp.WeightLearner` seam is a protocol, so neither side imports the other). This module needs
the extra ``train`` (torch) and is imported only for such a run.
The TOML holds :class:`~nlgrad.trainer.config.TrainConfig` options (``model``, ``method``, ``lora``, ``lr``,
``group_size``, ``kl_coef``, ...; at the top level or in a ``[trainer]`` table, so an nlgrad config file can carry
it). What the optimize run already decides is not set there (see ``SET_BY_RUN``).

A GGUF model behind llama-server cannot be updated, so the trained HF/torch model *is the agent* of the run:

* **Batch rollouts** (:meth:`TrainerWeightLearner.rollouts`, which JERP calls instead of ``ws.rollouts``): every
  task of JERP's batch is played ``group_size`` (G) times, as rollouts ``<task id>#<g>`` (same task, same
  environment seed), by the trainer's :class:`~nlgrad.trainer.hf_lm.LearnerLM` in *sample* mode, through nlgrad's
  executor and program with the workspace's rule pool and JERP's per-task retrieval hook, so the prompts hold the
  retrieved rules. Each episode's sampled token ids and environment state keys go to ``rollouts/turns.jsonl``
  (before its result, so a resumed iteration reads them back); its trace and result are nlgrad's usual run files.
  JERP reads these G x batch rollouts (votes, reflections, references); each episode is seeded by (seed, iteration,
  rollout id), so a killed iteration plays the same episodes again.
* **Weight step** (:meth:`TrainerWeightLearner.on_batch`, JERP's seam, called with the records of those rollouts):
  the rollouts are grouped by task (G each), advantages come from the configured estimator (``method``: grpo,
  gigpo, ...) and the trainer's PPO-clip + KL passes update the weights (:meth:`Trainer.learn`). A line goes to
  ``run/weights/curves.jsonl``, the iteration's ``weights.json`` gets the same record, and a checkpoint
  ``run/weights/checkpoints/step-<iteration>`` is written; after the last iteration the merged model goes to
  ``run/weights/final/``. Weight steps are not gated (the shared gate decides on the rule pool only).
* **Everything else the agent does** (the shared gate's validation runs, the final test) goes through the
  workspace's LM with its ``agent`` role replaced by the same model in *greedy* mode (:class:`AgentOverride`); the
  critic and optimizer roles stay what ``--lm`` / the config say (the reflector calls them through litellm).

Resume: the same command on the same ``--out`` loads the latest weight checkpoint (weights, optimizer, RNG,
TIGPO's statistics) in ``setup``. If the run was killed after an iteration's weight step but before the iteration
was committed, the step is not taken twice: its rollouts are read back for JERP and the weights stay. A different
trainer configuration in the same ``--out`` is refused, naming what differs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import time
import tomllib
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from nlgrad.errors import ConfigError, NlgradError
from nlgrad.files import read_jsonl
from nlgrad.journal import append_line
from nlgrad.lm.structured import parse_structured
from nlgrad.runtime.executor import RunResult, TaskResult, summarize
from nlgrad.runtime.ray_executor import executor_for
from nlgrad.runtime.rundir import RunDir
from nlgrad.runtime.split_guard import guard_not_test
from nlgrad.runtime.trace import Trace
from nlgrad.trainer.config import TrainConfig, check_options
from nlgrad.trainer.env_states import RecordingBenchmark
from nlgrad.trainer.estimators import ESTIMATORS
from nlgrad.trainer.evaluation import save_merged
from nlgrad.trainer.hf_lm import LearnerLM, SampledTurn
from nlgrad.trainer.loop import Trainer
from nlgrad.trainer.rollout import EpisodeRollout, align_turns, episode_states

OPTION = "--method-option trainer"
# TrainConfig options that the optimize run decides: where each one comes from.
SET_BY_RUN = {
    "benchmark": "--benchmark", "program": "--program", "steps": "--iterations (one weight step per iteration)",
    "tasks_per_step": "--batch", "seed": "--seed", "step_cap": "--step-cap", "rules": "JERP's own rule pool",
    "rules_k": "--method-option k", "rules_embedder": "--method-option embedder", "eval_n": "--val / --test-n",
    "test_n": "--test-n", "val_n": "--val", "val_every": "the shared gate", "eval_step_cap": "--step-cap",
    "save_every": "every iteration", "workers": "one episode at a time on the model",
}
# Trainer methods whose rollouts would differ from the trajectories JERP reads (an estimator that re-rolls groups).
NOT_WITH_JERP = {name: "its hinted re-rolls of all-zero groups are episodes JERP would not read"
                 for name, estimator in ESTIMATORS.items() if estimator.guides_zero_groups}
ROLLOUT_SEP = "#"


def rollout_id(task_id: str, index: int) -> str:
    """The id of the ``index``-th rollout of a task in a JERP batch: ``<task id>#<index>``."""
    return f"{task_id}{ROLLOUT_SEP}{index}"


def group_copies(tasks: list, group_size: int) -> list:
    """Each task ``group_size`` times, as copies with rollout ids (same inputs, gold, seed and meta, plus
    ``meta["rollout_of"]`` = the task's id and ``meta["rollout"]`` = the copy's index), task by task."""
    return [dataclasses.replace(t, id=rollout_id(t.id, g), meta={**t.meta, "rollout_of": t.id, "rollout": g})
            for t in tasks for g in range(group_size)]


def episode_seed(seed: int, iteration: int, rid: str) -> int:
    """The sampling seed of one rollout: a function of the run's seed, the iteration and the rollout id only."""
    return int(hashlib.sha256(f"{seed}:{iteration}:{rid}".encode()).hexdigest()[:8], 16)


def read_trainer_options(spec: str | dict[str, Any]) -> dict[str, Any]:
    """The trainer options of ``trainer=``: an inline table, or a TOML file (its ``[trainer]`` table if it has one,
    else its top level), checked: none of ``SET_BY_RUN``, not a method of ``NOT_WITH_JERP``, ``model`` given, and
    every value valid for :class:`TrainConfig`. A problem is a :class:`ConfigError` naming the option."""
    if isinstance(spec, dict):
        values = dict(spec)
    else:
        path = Path(str(spec)).expanduser()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read the trainer configuration: {exc.strerror}", field=OPTION,
                              value=str(spec)) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"the trainer configuration is not valid TOML: {exc}", field=OPTION,
                              value=str(spec)) from None
        values = dict(data["trainer"]) if isinstance(data.get("trainer"), dict) else data
    for name in sorted(values):
        if name in SET_BY_RUN:
            raise ConfigError(f"the trainer option {name!r} is set by the optimize run ({SET_BY_RUN[name]}); "
                              "leave it out of the trainer configuration", field=OPTION, value=name)
    if values.get("method") in NOT_WITH_JERP:
        raise ConfigError(f"trainer method {values['method']!r} cannot train JERP's rollouts: "
                          f"{NOT_WITH_JERP[values['method']]}", field=OPTION, value=f"method={values['method']}")
    if not values.get("model"):
        raise ConfigError("the trainer configuration needs model = an HF model directory, a .gguf file or 'tiny'",
                          field=OPTION, value="model")
    check_options(values, field=OPTION)
    return values


def trainer_config(values: dict[str, Any], config) -> TrainConfig:
    """The TrainConfig of a JERP run: the trainer options plus what the optimize ``config`` decides."""
    return TrainConfig(**values, benchmark=config.benchmark, program=config.program, steps=config.iterations,
                       tasks_per_step=config.batch, seed=config.seed, step_cap=config.step_cap, save_every=1)


class AgentOverride:
    """An LM for nlgrad's executor: the ``agent`` role is ``agent`` (a :class:`LearnerLM`), every other role the
    ``base`` LM (critic, optimizer: litellm). Agent calls are recorded in the base LM's ledger (role ``agent``), so
    the run's ledger and budgets count them; they run one at a time (``parallelism`` 1) and are never cached."""

    def __init__(self, base, agent):
        self.base, self.agent = base, agent

    @property
    def ledger(self):
        return self.base.ledger

    def model_for(self, role: str) -> str:
        return self.agent.name if role == "agent" else self.base.model_for(role)

    def parallelism(self, role: str) -> int:
        return 1 if role == "agent" else self.base.parallelism(role)

    def constrains_json(self, role: str) -> bool:
        return False if role == "agent" else self.base.constrains_json(role)

    def complete(self, role: str, messages: list[dict[str, str]], **kwargs: Any):
        if role != "agent":
            return self.base.complete(role, messages, **kwargs)
        completion = self.agent.complete(role, messages, **kwargs)
        self.base.ledger.record("agent", cached=False, prompt_tokens=completion.prompt_tokens,
                                completion_tokens=completion.completion_tokens, wall_s=completion.latency_s)
        return completion

    def structured(self, role: str, messages: list[dict[str, str]], schema, **kwargs: Any):
        if role != "agent":
            return self.base.structured(role, messages, schema, **kwargs)
        return parse_structured(self, role, messages, schema, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)


class TrainerWeightLearner:
    """:class:`~nlgrad.methods.jerp.WeightLearner` backed by the companion trainer (see the module docstring).

    ``trainer``: the trainer options (an inline table or a TOML path, read by :func:`read_trainer_options`; checked
    when the learner is made, so a bad option fails before any work). ``learner_model``: an already
    loaded :class:`~nlgrad.trainer.learner_model.LearnerModel` (tests), else ``model`` is loaded in :meth:`setup`."""

    def __init__(self, trainer: str | dict[str, Any], *, learner_model=None, console=None):
        self.options = read_trainer_options(trainer)
        self.learner_model, self.console = learner_model, console
        self.trainer = None  # the Trainer, made in setup
        self.done = 0  # iterations whose weight step is done (the latest checkpoint's step)
        self._pending: dict[int, tuple[dict[str, Any], float]] = {}  # iteration -> (episodes by rollout id, wall s)

    # ---- setup and resume -----------------------------------------------------------------------------------
    def setup(self, ws) -> None:
        """Load the model (or resume its checkpoint) under ``<out>/run/weights/`` and make it the run's agent.
        Called by JERP's ``setup`` after its retrieval hook is installed; idempotent."""
        if self.trainer is not None:
            return
        if ws.config.executor != "thread":
            raise ConfigError("JERP's weight half runs its model in this process; use the thread executor",
                              field="--executor", value=ws.config.executor)
        config = trainer_config(self.options, ws.config)
        self.console = self.console or Console(stderr=True)
        self.trainer = Trainer(config, ws.work_dir / "weights", learner_model=self.learner_model, console=self.console,
                               benchmark=ws.benchmark, program=ws.program)
        self.done = self.trainer._resume()
        self.greedy = LearnerLM(self.trainer.learner_model, name=self.trainer.lm.name, mode="greedy",
                                max_tokens_cap=config.max_new_tokens)
        self.base_lm = ws.lm.base if isinstance(ws.lm, AgentOverride) else ws.lm
        ws.lm = AgentOverride(self.base_lm, self.greedy)

    def _check_iteration(self, iteration: int) -> None:
        if iteration > self.done + 1:
            raise ConfigError(f"the weight checkpoints under run/weights/checkpoints end at iteration {self.done}, "
                              f"but iteration {iteration} is next: they were removed or come from another run; "
                              "restore them or choose a new --out", field="--out")

    # ---- the batch's rollouts ---------------------------------------------------------------------------------
    def rollouts(self, ws, tasks: list, memory, *, iteration: int, label: str = "rollouts"):
        """Play each of ``tasks`` G times with the trained model (sampling) and the workspace's pool and retrieval
        hook, into ``iter-NNNN/<label>/``; returns ``(RunResult, the rollout tasks)`` for JERP. Episodes already
        there (a resumed iteration) are read back with their sampled turns."""
        self._check_iteration(iteration)
        trainer = self.trainer
        copies = guard_not_test(group_copies(tasks, trainer.config.group_size))
        run_dir = RunDir(ws.iteration_dir(iteration) / label).create()
        turns_path = run_dir.path / "turns.jsonl"
        done = run_dir.load_results(include_errors=iteration <= self.done)  # errors are replayed, unless trained on
        saved = _read_turns(turns_path)
        lm = AgentOverride(self.base_lm, trainer.lm)
        executor = executor_for(None, benchmark=RecordingBenchmark(ws.benchmark, trainer.state_log),
                                program=ws.program, lm=lm, policy=memory, workers=1, step_cap=ws.step_cap,
                                progress=False, label=label, policy_for_task=ws.policy_for_task)
        results, traces, episodes = [], {}, {}
        start = time.monotonic()
        trainer.learner_model.model.eval()
        try:
            for task in copies:
                trace_path = run_dir.trace_path(task.id)
                if task.id in done and task.id in saved and trace_path.exists():
                    result, trace = TaskResult(**done[task.id]), Trace.load(trace_path)
                    sampled, states = saved[task.id]
                else:
                    if iteration <= self.done:
                        raise NlgradError(f"iteration {iteration}'s weight step is done but its rollout {task.id} "
                                          f"is missing from {run_dir.path}; restore it or choose a new --out")
                    result, trace, sampled, states = self._play(executor, task, iteration)
                    append_line(turns_path, json.dumps({"task_id": task.id, "states": states,  # before the
                                                        "turns": [_turn_record(t) for t in sampled]}))  # result
                    run_dir.save_trace(trace)
                    run_dir.append_result(result.to_dict())
                results.append(result)
                traces[task.id] = trace
                episodes[task.id] = self._episode(task, result, trace, sampled, states)
        finally:
            executor._close_envs()
        wall = time.monotonic() - start
        summary = summarize(results, wall)
        run_dir.write_summary(summary)
        errors = [r.error for r in results if r.error]
        if results and len(errors) == len(results):
            raise NlgradError(f"every {label} rollout failed, e.g.: {errors[0]} (see {run_dir.path})")
        self._pending[iteration] = (episodes, wall)
        return RunResult(results=results, summary=summary, run_dir=run_dir, traces=traces), copies

    def _play(self, executor, task, iteration: int):
        seed = episode_seed(self.trainer.config.seed, iteration, task.id)
        random.seed(seed)
        torch.manual_seed(seed)
        lm, log = self.trainer.lm, self.trainer.state_log
        lm.take_turns()  # nothing left over from an aborted episode in this thread
        log.begin()
        result, trace = executor.run_task(task)
        return result, trace, lm.take_turns(), log.states()

    @staticmethod
    def _episode(task, result, trace, sampled, states):
        original = dataclasses.replace(task, id=task.meta["rollout_of"])
        observed = episode_states(trace, states)
        return EpisodeRollout(task=original, index=int(task.meta["rollout"]),
                              turns=align_turns(sampled, trace, observed), score=float(result.score),
                              success=bool(result.success), steps=result.steps, error=result.error,
                              observations=observed)

    # ---- the weight step -------------------------------------------------------------------------------------
    def on_batch(self, records: list[dict[str, Any]], ws, iteration: int) -> None:
        """One weight step on the rollouts of ``records`` (those :meth:`rollouts` played this iteration), grouped
        by task; checkpoint ``step-<iteration>``. A step already taken before a restart is not taken again."""
        if iteration <= self.done:
            ws.write(iteration, "weights.json", {"iteration": iteration, "skipped": "this iteration's weight step "
                                                 "was taken before the run was resumed"})
            return
        pending = self._pending.pop(iteration, None)
        if pending is None:
            raise NlgradError("JERP's weight half trains on the rollouts it played itself; this iteration's "
                              "rollouts did not come from TrainerWeightLearner.rollouts")
        episodes, rollout_s = pending
        missing = [r["task_id"] for r in records if r["task_id"] not in episodes]
        if missing:
            raise NlgradError(f"records of rollouts that were not played by the trained model: {missing[:3]}")
        groups = episode_groups([episodes[r["task_id"]] for r in records])
        trainer = self.trainer
        t0 = time.monotonic()
        record = trainer.learn(groups, iteration - 1, tasks=[g[0].task for g in groups], method_stats={}, t0=t0,
                               t_rollout=rollout_s)
        record["iteration"] = iteration
        with open(trainer.curves_path, "a", encoding="utf-8") as fh:  # a resume truncates it to the checkpoint
            fh.write(json.dumps(record, sort_keys=True) + "\n")
        if iteration == ws.config.iterations:  # before the checkpoint: killed in between, the step is replayed
            record["final_dir"] = str(save_merged(trainer.learner_model, trainer.out_dir / "final"))
        trainer.save_checkpoint(iteration, iteration=iteration)
        self.done = iteration
        ws.write(iteration, "weights.json", record)
        self.console.print(f"[jerp weights] iteration {iteration}: score {record['score_mean']:.3f} "
                           f"loss {record['loss']:.4f} kl {record['kl']:.4f} "
                           f"turns {record['trained_turns']}/{record['turns']} ({record['updates']} updates)",
                           markup=False)


def episode_groups(episodes: list) -> list[list]:
    """Episodes grouped by task (``episode.task.id``), groups in order of first appearance, each ordered by the
    rollout's index."""
    groups: dict[str, list] = {}
    for ep in episodes:
        groups.setdefault(ep.task.id, []).append(ep)
    return [sorted(g, key=lambda ep: ep.index) for g in groups.values()]


def _turn_record(turn) -> dict[str, Any]:
    return {"prompt_ids": turn.prompt_ids, "completion_ids": turn.completion_ids, "text": turn.text,
            "entropy": turn.entropy, "guided": turn.guided}


def _read_turns(path: Path) -> dict[str, tuple[list, list[str]]]:
    """rollout id -> (sampled turns, state keys) from ``turns.jsonl`` (the latest line of a rollout wins)."""
    out: dict[str, tuple[list, list[str]]] = {}
    if not path.exists():
        return out
    for rec in read_jsonl(path):
        if isinstance(rec, dict) and "task_id" in rec:
            out[rec["task_id"]] = ([SampledTurn(messages=[], **t) for t in rec.get("turns", [])],
                                   list(rec.get("states", [])))
    return out
