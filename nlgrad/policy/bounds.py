"""PolicyBounds: every limit on a policy update, in one place.

The bounds play the role of a learning rate for text: how many entries a route may hold, how long its rendered text
may be, how many text-changing operations one update may apply, and how much text (token edit distance) one update
may change. They are enforced only by :func:`nlgrad.policy.update.apply_update`; see its docstring for the trim rule.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from nlgrad.policy.schema import MAX_EXAMPLES_PER_ROUTE


class PolicyBounds(BaseModel):
    """Limits on one update and on each route. Defaults suit short route-local corrections."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_entries_per_route: int = Field(
        default=12, ge=1, description="active entries a route may hold (default 12)")
    max_tokens_per_route: int = Field(
        default=400, ge=1, description="tokens of a route's rendered text (default 400; word/punct tokenizer)")
    max_ops_per_update: int = Field(
        default=4, ge=1, description="text-changing ops (add/edit/delete/merge) applied per update (default 4)")
    max_edit_cost: int = Field(
        default=160, ge=1,
        description="total token edit distance one update may cause across all routes (default 160)")
    max_examples_per_route: int = Field(
        default=MAX_EXAMPLES_PER_ROUTE, ge=0, le=100_000,
        description=f"active example entries a route may hold (default {MAX_EXAMPLES_PER_ROUTE}; a policy whose "
                    "selection shows each call its k nearest examples may hold more)")
    dedupe_threshold: float = Field(
        default=0.8, gt=0.0, le=1.0,
        description="similarity at or above which an added entry is merged into an existing one (default 0.8)")


DEFAULT_BOUNDS = PolicyBounds()
