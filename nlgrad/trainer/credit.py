"""Per-turn advantages for a batch of rollout groups, by the configured method's estimator (the registry in
:mod:`nlgrad.trainer.estimators`; the formulas are pure functions in ``advantages*.py``).

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
from nlgrad.trainer.advantages_tigpo import TaskHistory
from nlgrad.trainer.batch import completion_logprobs, pad_batch
from nlgrad.trainer.config import TrainConfig
from nlgrad.trainer.estimators import StepContext, get_estimator
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


def assign_advantages(groups: list[list[EpisodeRollout]], config: TrainConfig, step: int,
                      scorer: InfoGainScorer | None = None, task_history: TaskHistory | None = None,
                      revisit_ids: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """Set ``turn.advantage`` on every turn of every episode with the configured method's estimator (from the
    registry, :mod:`nlgrad.trainer.estimators`); returns the estimator's statistics for the log. ``scorer``: CIGPO's
    information-gain scorer; ``task_history``: TIGPO's per-task transition graphs and exploration groups (updated in
    place; a fresh one when None); ``revisit_ids``: the tasks whose groups are this step's revisits."""
    context = StepContext(config=config, step=step, normalize=config.effective_normalize(), scorer=scorer,
                          task_history=task_history, revisit_ids=frozenset(revisit_ids))
    result = get_estimator(config.method).advantages(groups, context)
    for group, per_turn in zip(groups, result.per_group):
        for ep, values in zip(group, per_turn):
            for turn, value in zip(ep.turns, values):
                turn.advantage = float(value)
    return result.stats
