"""Turn samples into padded tensors and score completion tokens under a model.

Sequences are *left*-padded ``prompt + completion``, so every completion ends at the last position and the model
only needs logits for the last ``K + 1`` positions (``logits_to_keep``), not for the whole (long) prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class PaddedBatch:
    input_ids: torch.Tensor  # [B, L]
    attention_mask: torch.Tensor  # [B, L]
    position_ids: torch.Tensor  # [B, L]
    completion_mask: torch.Tensor  # [B, K] float, 1 on completion tokens
    completion_ids: torch.Tensor  # [B, K]

    @property
    def tokens(self) -> int:
        return int(self.attention_mask.sum())


def pad_batch(pairs: list[tuple[list[int], list[int]]], pad_id: int, device: torch.device) -> PaddedBatch:
    """Left-pad ``(prompt_ids, completion_ids)`` pairs. Every completion must have at least one token."""
    if not pairs or any(not c for _, c in pairs):
        raise ValueError("need at least one pair, each with a non-empty completion")
    length = max(len(p) + len(c) for p, c in pairs)
    k = max(len(c) for _, c in pairs)
    ids = torch.full((len(pairs), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(pairs), length), dtype=torch.long)
    comp_mask = torch.zeros((len(pairs), k), dtype=torch.float32)
    for i, (prompt, completion) in enumerate(pairs):
        seq = list(prompt) + list(completion)
        ids[i, length - len(seq):] = torch.tensor(seq, dtype=torch.long)
        mask[i, length - len(seq):] = 1
        comp_mask[i, k - len(completion):] = 1.0
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return PaddedBatch(ids.to(device), mask.to(device), positions.to(device), comp_mask.to(device),
                       ids[:, length - k:].to(device))


def completion_logprobs(model, batch: PaddedBatch, temperature: float = 1.0) -> torch.Tensor:
    """``log p(token)`` of the last K positions under ``model`` at ``temperature`` ([B, K]; mask with
    ``batch.completion_mask``)."""
    k = batch.completion_ids.shape[1]
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=batch.position_ids,
                use_cache=False, logits_to_keep=k + 1)
    logits = out.logits[:, -(k + 1):-1, :].float()
    if temperature != 1.0:
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(-1, batch.completion_ids.unsqueeze(-1)).squeeze(-1)
