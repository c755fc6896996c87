"""DRPO scoring for document edits: the group advantage of each candidate edit and the cost of an edit.

For a group of G candidate edits e_1..e_G of one document, each A/B-tested by the frozen task agent against the
unedited control on the same tasks and seeds (mean rewards R_1..R_G and R_0)::

    A_i = alpha * (R_i - median(R)) / (1.4826 * MAD(R) + delta)      # robust z-score within the group
        + (1 - alpha) * (R_i - R_0) / (|R_0| + delta)                # relative gain over the control
        - lambda_edit * C_edit(e_i)                                   # price of changing the document

    C_edit(e) = w(location, action) * (eta * lev_tok(old, new) + (1 - eta) * (1 - cos(old, new)))

``MAD(R) = median(|R_i - median(R)|)`` (1.4826 * MAD estimates the standard deviation of normal data, robustly to
one lucky candidate); ``lev_tok`` is the token Levenshtein distance divided by the longer token count (0..1);
``cos`` is the cosine of the two texts' embeddings (see :mod:`nlgrad.text.embeddings`); ``old``/``new`` are
the section's text before and after the edit ("" for a section that does not exist on that side).

Defaults (:class:`DRPOParams`) and why:

* ``alpha = 0.5`` - rank and absolute gain count equally: the group term alone would prefer the best of eight
  equally bad edits, the control term alone ignores how the candidate compares with its siblings.
* ``delta = 0.1`` - rewards live in [0, 1] and are means over a handful of tasks (resolution ~1/n); 0.1 keeps both
  denominators away from zero when all candidates tie (MAD = 0) or the control scores 0, without swamping them.
* ``lambda_edit = 0.1`` - a full rewrite of a section costs at most ``w`` (about 1), so its price is ~0.1 of
  advantage: a tie-breaker that prefers the smaller of two equally good edits, never a veto of a real gain.
* ``eta = 0.5`` - surface change (tokens) and meaning change (embedding) are weighted equally.
* ``action_weights = {add: 1.0, replace: 1.0, delete: 1.5}`` - deleting throws away text that earlier passed a
  paired A/B test and cannot be recovered from the edit itself, so it is priced higher.
* ``protected_weight = 2.0`` - location weight for sections written by a human (provenance ``human``): editing
  expert text needs twice the evidence; sections learned by a method weigh 1.0.
"""

from __future__ import annotations

from statistics import median
from typing import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from nlgrad.policy.tokens import policy_tokens, token_edit_distance

MAD_SCALE = 1.4826


class DRPOParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    alpha: float = Field(default=0.5, ge=0.0, le=1.0, description="weight of the group z-score vs the control term")
    delta: float = Field(default=0.1, gt=0.0, description="stabiliser of both denominators")
    lambda_edit: float = Field(default=0.1, ge=0.0, description="price of one unit of edit cost")
    eta: float = Field(default=0.5, ge=0.0, le=1.0, description="token-distance share of the edit cost")
    action_weights: dict[str, float] = Field(default_factory=lambda: {"add": 1.0, "replace": 1.0, "delete": 1.5})
    protected_weight: float = Field(default=2.0, ge=0.0, description="location weight of human-written sections")


def mad(values: Sequence[float]) -> float:
    """Median absolute deviation from the median (unscaled)."""
    if not values:
        return 0.0
    m = median(values)
    return median(abs(v - m) for v in values)


def normalized_token_levenshtein(old: str, new: str) -> float:
    """Token edit distance / the longer token count, in [0, 1] (0 for two empty texts)."""
    longest = max(len(policy_tokens(old)), len(policy_tokens(new)))
    if longest == 0:
        return 0.0
    return token_edit_distance(old, new) / longest


def edit_weight(action: str, *, protected: bool, params: DRPOParams) -> float:
    """w(location, action): the action's weight times the location's (protected human-written section or not)."""
    return params.action_weights.get(action, 1.0) * (params.protected_weight if protected else 1.0)


def edit_cost(old: str, new: str, *, weight: float, eta: float, cosine: Callable[[str, str], float]) -> float:
    """C_edit = weight * (eta * lev_tok(old, new) + (1 - eta) * (1 - cosine(old, new)))."""
    lev = normalized_token_levenshtein(old, new)
    return weight * (eta * lev + (1.0 - eta) * (1.0 - cosine(old, new)))


def advantage_terms(rewards: Sequence[float], control: float, costs: Sequence[float],
                    params: DRPOParams) -> list[dict[str, float]]:
    """Per candidate: the group term, the control term, the cost term and their sum ``advantage``."""
    if len(rewards) != len(costs):
        raise ValueError(f"{len(rewards)} rewards but {len(costs)} edit costs")
    if not rewards:
        return []
    med = median(rewards)
    scale = MAD_SCALE * mad(rewards) + params.delta
    out = []
    for reward, cost in zip(rewards, costs):
        group = params.alpha * (reward - med) / scale
        gain = (1.0 - params.alpha) * (reward - control) / (abs(control) + params.delta)
        price = params.lambda_edit * cost
        out.append({"group": group, "control": gain, "cost": price, "advantage": group + gain - price})
    return out


def drpo_advantages(rewards: Sequence[float], control: float, costs: Sequence[float],
                    params: DRPOParams | None = None) -> list[float]:
    """A_i for each candidate (see the module docstring)."""
    return [t["advantage"] for t in advantage_terms(rewards, control, costs, params or DRPOParams())]
