"""TAPO's auxiliary loss: predict the environment's next observation from a turn's prompt and reply.

From the trace's environment nodes (:mod:`nlgrad.trainer.trace_uses`), every turn whose output an ``env.step``
used has a *next observation*: the text that step returned. The auxiliary sample is
``(prompt_ids + completion_ids, tokens(next observation)[:max_tokens])`` and its loss is the token-mean negative
log-likelihood of the observation tokens under the learner model, times ``coef``:

``L_aux = coef * mean over observation tokens of -log p(o_j | prompt, reply, o_<j)``

It is *alternated* with the PPO step: after each PPO epoch's minibatches, one pass of auxiliary minibatches,
each its own optimizer step (grad-norm clipped like the PPO step's).
"""

from __future__ import annotations

import torch

from nlgrad.trainer.batch import PaddedBatch, completion_logprobs, pad_batch
from nlgrad.trainer.rollout import Turn


def next_observation_pairs(turns: list[Turn], encode, max_tokens: int) -> list[tuple[list[int], list[int]]]:
    """``(context ids, observation ids)`` for every turn with a non-empty next observation; ``encode(text)`` gives
    token ids (no special tokens)."""
    pairs = []
    for turn in turns:
        if not turn.next_observation or not turn.completion_ids:
            continue
        target = list(encode(turn.next_observation))[:max_tokens]
        if target:
            pairs.append((list(turn.prompt_ids) + list(turn.completion_ids), target))
    return pairs


def next_observation_loss(model, batch: PaddedBatch) -> torch.Tensor:
    """Token-mean negative log-likelihood of the observation tokens (the batch's completions)."""
    logp = completion_logprobs(model, batch)
    mask = batch.completion_mask
    return -(logp * mask).sum() / mask.sum().clamp(min=1.0)


def auxiliary_pass(model, optimizer, params, pairs, *, pad_id: int, device, minibatch: int, coef: float,
                   max_grad_norm: float) -> list[float]:
    """One pass of ``coef``-weighted next-observation updates over ``pairs``; returns the unweighted losses."""
    losses = []
    for i in range(0, len(pairs), minibatch):
        batch = pad_batch(pairs[i:i + minibatch], pad_id, device)
        loss = next_observation_loss(model, batch)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite next-observation loss: {float(loss)}")
        optimizer.zero_grad(set_to_none=True)
        (coef * loss).backward()
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses
