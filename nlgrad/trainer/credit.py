"""Per-turn advantages for a batch of rollout groups, by method (the estimators live in ``advantages.py``).

CIGPO's information gain needs the frozen reference model: :class:`InfoGainScorer` computes
``log p_ref(y* | q, e_<=t)`` for the evidence revealed up to each turn (tool results recorded in the trace) with the
prompt in ``templates/info_gain.j2``.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import torch

from nlgrad.errors import ConfigError
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Task
from nlgrad.trainer import advantages as adv
from nlgrad.trainer.advantages_difficulty import hidifftir_advantages, route_failure_rates
from nlgrad.trainer.advantages_milestones import milegpo_advantages
from nlgrad.trainer.advantages_entropy import stapo_advantages
from nlgrad.trainer.advantages_routing import iapo_advantages
from nlgrad.trainer.advantages_tigpo import TaskHistory, tigpo_advantages
from nlgrad.trainer.batch import completion_logprobs, pad_batch
from nlgrad.trainer.config import TrainConfig
from nlgrad.trainer.learner_model import LearnerModel
from nlgrad.trainer.rollout import EpisodeRollout


def question_and_gold(task: Task) -> tuple[str, str]:
    """The question text and gold answer of a QA task; a clear error for tasks without a gold answer."""
    gold = task.gold
    if isinstance(gold, dict):
        gold = gold.get("answer", gold.get("label"))
    if gold is None or (isinstance(gold, (list, dict)) and not gold):
        raise ConfigError("CIGPO needs a QA benchmark whose tasks have a gold answer", field="--method",
                          value=f"cigpo on {task.id}")
    if isinstance(gold, list):
        gold = gold[0]
    inputs = task.inputs or {}
    question = inputs.get("question") or inputs.get("claim") or next(
        (v for v in inputs.values() if isinstance(v, str)), "")
    return str(question), str(gold)


class InfoGainScorer:
    """``score(task, evidences) -> [log p_ref(y* | q, e_<=t) for t = 0..T]`` with the frozen reference model."""

    def __init__(self, learner_model: LearnerModel, *, batch_size: int = 8):
        template = files("nlgrad.trainer").joinpath("templates/info_gain.j2").read_text(encoding="utf-8")
        self.module = Module(route="trainer.info_gain", template=template, template_name="info_gain.j2")
        self.learner_model, self.batch_size = learner_model, batch_size

    def prompt_ids(self, question: str, evidence: list[str]) -> list[int]:
        return self.learner_model.encode_chat(self.module.render("", {"question": question, "evidence": evidence}))

    @torch.no_grad()
    def loglik(self, question: str, gold: str, evidence_sets: list[list[str]]) -> list[float]:
        answer = self.learner_model.encode_text(gold) or [self.learner_model.tokenizer.eos_token_id]
        pairs = [(self.prompt_ids(question, ev), answer) for ev in evidence_sets]
        out: list[float] = []
        with self.learner_model.reference() as ref:
            ref.eval()
            for i in range(0, len(pairs), self.batch_size):
                batch = pad_batch(pairs[i:i + self.batch_size], self.learner_model.tokenizer.pad_token_id,
                                  self.learner_model.device)
                logp = completion_logprobs(ref, batch)
                out.extend(float(v) for v in (logp * batch.completion_mask).sum(-1))
        return out

    def episode_gains(self, episode: EpisodeRollout) -> list[float]:
        """Per-turn information gain; a turn that revealed no evidence gains exactly 0."""
        question, gold = question_and_gold(episode.task)
        prefixes: list[list[str]] = [[]]
        for turn in episode.turns:
            if turn.evidence:
                prefixes.append(prefixes[-1] + [turn.evidence])
        logps = self.loglik(question, gold, prefixes)
        gains_at_evidence = adv.information_gain_rewards(logps)
        gains, k = [], 0
        for turn in episode.turns:
            if turn.evidence:
                gains.append(gains_at_evidence[k])
                k += 1
            else:
                gains.append(0.0)
        return gains


def turn_steps(episode: EpisodeRollout) -> list[int]:
    """The environment step every turn of the episode acted at."""
    return [t.env_step for t in episode.turns]


def gigpo_step_rewards(episode: EpisodeRollout, *, novelty: bool) -> list[float]:
    """Rewards by environment step for GiGPO's step returns: the outcome on the last step, plus (``novelty``: the
    ProGPO step-level combination) 1.0 for every step that reached a state the episode had not visited."""
    rewards = adv.outcome_step_rewards(episode.horizon, episode.score)
    if novelty:
        for k, bonus in enumerate(adv.novel_state_rewards(episode.observations)):
            rewards[k] += bonus
    return rewards


def gigpo_group(group: list[EpisodeRollout], config: TrainConfig, norm: str) -> tuple[list[list[float]], bool]:
    """GiGPO advantages of a group; with ``progpo_step``, an all-failed group's step rewards include novel-state
    visits. Returns the advantages and whether the novelty signal was used."""
    novelty = config.progpo_step and not any(ep.success for ep in group)
    step_returns = [adv.env_step_returns(turn_steps(ep), gigpo_step_rewards(ep, novelty=novelty), config.gamma)
                    for ep in group]
    per_turn = adv.gigpo_advantages([ep.score for ep in group], [[t.anchor for t in ep.turns] for ep in group],
                                    step_returns, omega=config.omega, normalize=norm)
    return per_turn, novelty


def progpo_group(group: list[EpisodeRollout], config: TrainConfig, norm: str) -> tuple[list[list[float]], str]:
    """ProGPO advantages of a group (episode level, or step level with ``progpo_step``) and the signal used."""
    returns, successes = [ep.score for ep in group], [ep.success for ep in group]
    if config.progpo_step:
        return adv.progpo_step_advantages(returns, successes, [turn_steps(ep) for ep in group],
                                          [adv.novel_state_rewards(ep.observations) for ep in group],
                                          gamma=config.gamma, normalize=norm)
    coverage = [adv.first_visit_coverage(ep.observations) for ep in group]
    episode_adv, signal = adv.progpo_advantages(returns, successes, coverage, norm)
    return adv.broadcast(episode_adv, [len(ep.turns) for ep in group]), signal


def tigpo_group(group: list[EpisodeRollout], config: TrainConfig, norm: str, history: TaskHistory, *,
                revisit: bool, step: int) -> list[list[float]]:
    """TIGPO advantages of a group: step credit from the task's persistent transition graph; a revisit group's
    episode credit against its earlier exploration group as well."""
    return tigpo_advantages(group[0].task.id, history, [ep.score for ep in group], [ep.observations for ep in group],
                            [gigpo_step_rewards(ep, novelty=False) for ep in group], [turn_steps(ep) for ep in group],
                            revisit=revisit, step=step, omega=config.omega, gamma=config.gamma, normalize=norm)


def assign_advantages(groups: list[list[EpisodeRollout]], config: TrainConfig, step: int,
                      scorer: InfoGainScorer | None = None,
                      task_history: TaskHistory | None = None,
                      revisit_ids: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """Set ``turn.advantage`` on every turn of every episode; returns method statistics for the log.
    ``task_history``: TIGPO's per-task transition graphs and exploration groups (updated in place; a fresh one when
    None); ``revisit_ids``: the tasks whose groups are this step's revisits."""
    norm = config.effective_normalize()
    stats: dict[str, Any] = {}
    progress_groups = 0  # groups whose signal was ProGPO's coverage or novelty
    weight = None
    failure_rates = route_failure_rates((t.route, ep.success) for group in groups for ep in group for t in ep.turns)
    for group in groups:
        lengths = [len(ep.turns) for ep in group]
        returns = [ep.score for ep in group]
        if config.method in ("grpo", "actguide", "tapo"):  # ActGuide-RL and TAPO change rollouts / the loss
            per_turn = adv.broadcast(adv.grpo_advantages(returns, norm), lengths)
        elif config.method == "gigpo":
            per_turn, novelty = gigpo_group(group, config, norm)
            progress_groups += novelty
        elif config.method == "progpo":
            per_turn, signal = progpo_group(group, config, norm)
            progress_groups += signal != "outcome"
        elif config.method == "hidifftir":
            per_turn = hidifftir_advantages(returns, [[t.route for t in ep.turns] for ep in group], failure_rates,
                                            difficulty_weight=config.difficulty_weight,
                                            route_weight=config.route_failure_weight, normalize=norm)
        elif config.method == "milegpo":
            per_turn = milegpo_advantages(returns, [ep.success for ep in group], [ep.observations for ep in group],
                                          [turn_steps(ep) for ep in group], coef=config.milestone_coef,
                                          gamma=config.gamma, prior=config.milestone_prior, normalize=norm)
        elif config.method == "tigpo":
            if task_history is None:
                task_history = TaskHistory()
            per_turn = tigpo_group(group, config, norm, task_history, revisit=group[0].task.id in revisit_ids,
                                   step=step)
        elif config.method == "stapo":
            per_turn, outliers = stapo_advantages(returns, [[t.anchor for t in ep.turns] for ep in group],
                                                  [[t.entropy for t in ep.turns] for ep in group],
                                                  z_threshold=config.stapo_z, reward_coef=config.stapo_scale,
                                                  penalty=config.stapo_penalty, normalize=norm)
            stats["entropy_outliers"] = stats.get("entropy_outliers", 0) + outliers
        elif config.method == "iapo":
            per_turn = iapo_advantages(returns, [[t.uses_supported for t in ep.turns] for ep in group],
                                       [[t.uses_failed for t in ep.turns] for ep in group], coef=config.iapo_coef,
                                       normalize=norm)
        elif config.method == "cigpo":
            if scorer is None:
                raise ValueError("CIGPO needs an information-gain scorer")
            for ep in group:
                ep.info_gains = scorer.episode_gains(ep)
            weight = adv.curriculum_weight(step, config.steps, start=config.ig_weight_start,
                                           end=config.ig_weight_end, schedule=config.ig_schedule)
            per_turn = adv.cigpo_advantages(returns, [ep.info_gains for ep in group], weight=weight, normalize=norm)
        else:  # pragma: no cover - validated by TrainConfig
            raise ValueError(f"unknown method {config.method!r}")
        for ep, values in zip(group, per_turn):
            for turn, value in zip(ep.turns, values):
                turn.advantage = float(value)
    if config.method == "progpo" or config.progpo_step:
        stats["coverage_groups"] = progress_groups
    if config.method == "hidifftir":
        stats["route_failure_rates"] = {route: round(rate, 4) for route, rate in sorted(failure_rates.items())}
    if config.method == "cigpo":
        gains = [g for group in groups for ep in group for g in ep.info_gains]
        stats["ig_weight"] = weight
        stats["info_gain_mean"] = sum(gains) / len(gains) if gains else 0.0
    return stats
