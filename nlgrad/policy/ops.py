"""Policy-update operations: what an LM may propose. Plain code (:func:`apply_update`) applies them.

Operations form a discriminated union on ``op``, so an LM's JSON proposal validates directly::

    [{"op": "add", "route": "twx.act", "text": "Open closed doors before moving on.", "when": "a door is closed"},
     {"op": "edit", "id": "twx.act#2", "text": "Take the coin as soon as you see it."},
     {"op": "delete", "id": "twx.act#4"},
     {"op": "upvote", "id": "twx.act#1"}, {"op": "downvote", "id": "twx.act#3", "amount": 2},
     {"op": "merge", "ids": ["twx.act#5", "twx.act#6"], "text": "Look before you move."}]

Unknown keys are ignored (LMs like to add a "rationale"); use ``reason`` for the justification, which is kept in
update reports and in the rejected-update buffer.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from nlgrad.policy.condition_split import separate_condition
from nlgrad.policy.errors import PolicyUpdateError
from nlgrad.policy.patterns import check_patterns
from nlgrad.policy.schema import (MAX_TEXT_CHARS, Condition, EntryId, EntryKind, EntryText, RouteName,
                                  check_example_text, clean_when)


class _OpBase(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reason: str = Field(default="", description="why the proposer wants this change")
    trace_ids: list[str] = Field(default_factory=list, description="traces that motivated the change")

    @field_validator("trace_ids", mode="before")
    @classmethod
    def _none_list(cls, value: Any) -> Any:
        return [] if value is None else value

    @property
    def changes_text(self) -> bool:
        """True for ops that change rendered text (counted against max_ops and edit cost)."""
        return True


class AddOp(_OpBase):
    """Add a new entry to a route (or, if it near-duplicates an active entry there, reinforce that entry)."""

    op: Literal["add"] = "add"
    route: RouteName
    text: EntryText
    when: Condition = None
    match: list[str] = Field(default_factory=list, description="input patterns that make the entry apply "
                             "(conditional entry); empty: always shown")
    kind: EntryKind = EntryKind.correction

    @field_validator("match", mode="before")
    @classmethod
    def _patterns(cls, value: object) -> object:
        return check_patterns(value)

    @model_validator(mode="after")
    def _bounded_example_and_condition_stated_once(self) -> "AddOp":
        check_example_text(self.kind, self.text)
        self.text, self.when = separate_condition(self.text, self.when, self.kind)
        return self


class EditOp(_OpBase):
    """Rewrite an entry's text and/or condition. ``when=""`` removes the condition; omitted fields are kept."""

    op: Literal["edit"] = "edit"
    id: EntryId
    text: EntryText | None = None
    when: str | None = None
    match: list[str] | None = Field(default=None, description="new input patterns ([] makes the entry "
                                    "unconditional); omitted: kept")

    @field_validator("match", mode="before")
    @classmethod
    def _patterns(cls, value: object) -> object:
        return None if value is None else check_patterns(value)

    @field_validator("when")
    @classmethod
    def _when_length(cls, value: str | None) -> str | None:
        if value is not None and len(value) > MAX_TEXT_CHARS:
            raise ValueError(f"a condition is limited to {MAX_TEXT_CHARS} characters")
        return value

    @model_validator(mode="after")
    def _something(self) -> "EditOp":
        if self.text is None and self.when is None and self.match is None:
            raise ValueError("an edit needs a new 'text', 'when' and/or 'match'")
        return self

    def new_when(self, old: str | None) -> str | None:
        return old if self.when is None else clean_when(self.when)


class DeleteOp(_OpBase):
    """Remove an entry."""

    op: Literal["delete"] = "delete"
    id: EntryId


class _VoteOp(_OpBase):
    """An up- or downvote of one entry: counts change, rendered text does not."""

    op: Literal["upvote", "downvote"]
    id: EntryId
    amount: int = Field(default=1, ge=1, le=1000)

    @property
    def changes_text(self) -> bool:
        return False


class UpvoteOp(_VoteOp):
    """Record that an entry helped (adds ``amount`` to ``helpful``)."""

    op: Literal["upvote"] = "upvote"


class DownvoteOp(_VoteOp):
    """Record that an entry hurt (adds ``amount`` to ``harmful``)."""

    op: Literal["downvote"] = "downvote"


class MergeOp(_OpBase):
    """Merge entries of one route into the first id; ``text``/``when`` default to the first entry's."""

    op: Literal["merge"] = "merge"
    ids: list[EntryId] = Field(min_length=2)
    text: EntryText | None = None
    when: str | None = None

    @field_validator("ids")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("merge ids must be distinct")
        return value


Operation = Annotated[Union[AddOp, EditOp, DeleteOp, UpvoteOp, DownvoteOp, MergeOp], Field(discriminator="op")]
"""One policy-update operation (discriminated on ``op``)."""

OPERATION_TYPES = (AddOp, EditOp, DeleteOp, UpvoteOp, DownvoteOp, MergeOp)
_OP_ADAPTER: TypeAdapter[Any] = TypeAdapter(Operation)
_OPS_ADAPTER: TypeAdapter[Any] = TypeAdapter(list[Operation])


def parse_operation(data: Any) -> Any:
    """Validate one operation (a dict or an operation model). Raises pydantic's ValidationError."""
    if isinstance(data, OPERATION_TYPES):
        return data
    return _OP_ADAPTER.validate_python(data)


def parse_operations(data: Any) -> list[Any]:
    """Validate a whole proposal (a list of dicts, or JSON text); one :class:`PolicyUpdateError` on failure."""
    try:
        if isinstance(data, (str, bytes)):
            return list(_OPS_ADAPTER.validate_json(data))
        return list(_OPS_ADAPTER.validate_python(list(data)))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise PolicyUpdateError(f"invalid policy operation at {field}: {first['msg']} (value: {first.get('input')!r:.120})") from None
    except TypeError as exc:
        raise PolicyUpdateError(f"a proposal is a list of operations: {exc}") from None


def operations_json_schema() -> dict[str, Any]:
    """JSON schema of a proposal (a list of operations), for structured-output prompts."""
    return _OPS_ADAPTER.json_schema()


