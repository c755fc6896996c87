"""The PPO-clip surrogate with a KL penalty to the frozen reference, per token.

For completion token j of turn i with advantage ``A_i``: ``ratio = exp(logp - old_logp)``,
``surrogate = min(ratio * A, clip(ratio, 1 - eps, 1 + eps_high) * A)`` and the KL term is the non-negative k3
estimator ``exp(ref - logp) - (ref - logp) - 1`` (GRPO's). The loss is ``-(surrogate - kl_coef * kl)``, averaged over
all completion tokens (``token-mean``) or per turn then over turns (``seq-mean``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class LossStats:
    loss: float
    kl: float
    clip_fraction: float
    ratio_mean: float
    tokens: int


def _aggregate(values: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    if how == "token-mean":
        return (values * mask).sum() / mask.sum().clamp(min=1.0)
    if how == "seq-mean":
        per_seq = (values * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
        return per_seq.mean()
    raise ValueError(f"unknown loss aggregation {how!r}")


def ppo_clip_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
                  ref_logp: torch.Tensor | None = None, clip_eps: float = 0.2, clip_eps_high: float | None = None,
                  kl_coef: float = 0.0, agg: str = "token-mean") -> tuple[torch.Tensor, LossStats]:
    """``logp``/``old_logp``/``ref_logp``/``mask``: [B, K]; ``advantages``: [B] (one per turn) or [B, K]."""
    adv = advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages
    ratio = torch.exp(logp - old_logp)
    high = clip_eps if clip_eps_high is None else clip_eps_high
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + high)
    surrogate = torch.minimum(ratio * adv, clipped * adv)
    per_token = -surrogate
    kl = torch.zeros_like(logp)
    if ref_logp is not None and kl_coef > 0:
        delta = ref_logp - logp
        kl = torch.exp(delta) - delta - 1.0
        per_token = per_token + kl_coef * kl
    loss = _aggregate(per_token, mask, agg)
    with torch.no_grad():
        n = mask.sum().clamp(min=1.0)
        was_clipped = ((ratio - clipped).abs() > 1e-8).float()
        stats = LossStats(loss=float(loss.detach()), kl=float((kl * mask).sum() / n),
                          clip_fraction=float((was_clipped * mask).sum() / n),
                          ratio_mean=float((ratio * mask).sum() / n), tokens=int(mask.sum()))
    return loss, stats
