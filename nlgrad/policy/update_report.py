"""What :func:`~nlgrad.policy.update.apply_update` reports: the provenance it stamps, and each operation's fate
(applied, merged into a duplicate, or trimmed with the rule that stopped it)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TrimRule = Literal["invalid", "max_ops_per_update", "max_edit_cost", "max_entries_per_route", "max_tokens_per_route",
                   "max_examples_per_route"]


class UpdateProvenance(BaseModel):
    """Who proposed an update and why: stamped on the entries it creates or revises."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(default="update", min_length=1, description="method name, e.g. 'nlgrad' or 'human'")
    iteration: int | None = Field(default=None, ge=0)
    trace_ids: list[str] = Field(default_factory=list)


class AppliedOp(BaseModel):
    index: int
    op: dict[str, Any]
    entry_id: str | None = None
    cost: int = 0
    evicted: list[str] = Field(default_factory=list)


class TrimmedOp(BaseModel):
    index: int
    op: dict[str, Any]
    rule: TrimRule
    reason: str


class MergedDuplicate(BaseModel):
    index: int
    op: dict[str, Any]
    into: str
    similarity: float


class UpdateReport(BaseModel):
    applied: list[AppliedOp] = Field(default_factory=list)
    trimmed: list[TrimmedOp] = Field(default_factory=list)
    merged_duplicates: list[MergedDuplicate] = Field(default_factory=list)
    total_cost: int = 0
    text_ops: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.applied or self.merged_duplicates)

    @property
    def evicted(self) -> list[str]:
        return [entry_id for applied in self.applied for entry_id in applied.evicted]

    def summary(self) -> str:
        parts = [f"applied {len(self.applied)} op(s), edit cost {self.total_cost}"]
        if self.merged_duplicates:
            parts.append(f"merged {len(self.merged_duplicates)} duplicate add(s)")
        if self.evicted:
            parts.append(f"evicted {', '.join(self.evicted)}")
        if self.trimmed:
            rules = sorted({t.rule for t in self.trimmed})
            parts.append(f"trimmed {len(self.trimmed)} op(s) [{', '.join(rules)}]")
        return "; ".join(parts)
