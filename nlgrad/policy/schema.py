"""The pieces of a policy memory file: entries, their kinds, statuses and provenance.

:class:`PolicyEntry` is one route-local natural-language correction. The containing document is
:class:`nlgrad.policy.memory.PolicyMemory`. Every model forbids unknown fields so a typo in a hand-written file is
an error naming the field rather than a silently ignored key.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from nlgrad.policy.patterns import check_patterns

SCHEMA_VERSION = 1
"""The on-disk format version this nlgrad reads and writes. Bump it (and add a migration) on incompatible changes."""

SUPPORTED_SCHEMA_VERSIONS = (1,)

MAX_TEXT_CHARS = 8000
MAX_EXAMPLE_CHARS = 2000
"""An ``example`` entry (a worked input -> output) is short: its text is limited to this many characters."""
MAX_EXAMPLES_PER_ROUTE = 8
"""The default of ``PolicyBounds.max_examples_per_route``: active ``example`` entries per route
(:func:`nlgrad.policy.apply_update` trims the rest with rule ``max_examples_per_route``); they also count against the
route's entry and token bounds like any entry."""
_ROUTE_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-/:]*$")
_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-/:#]*$")
_SEQ_ID_RE = re.compile(r"^(?P<route>.+)#(?P<n>\d+)$")


class FieldProblem(ValueError):
    """Raised inside validators to name the exact field and value of a cross-field problem (e.g. a duplicate id)."""

    def __init__(self, message: str, *, field: str, value: object):
        super().__init__(message)
        self.field, self.value, self.problem = field, value, message


def _check_route(value: str) -> str:
    if not _ROUTE_RE.match(value):
        raise ValueError("a route is a name like 'twx.act' or 'hotpot.hop2_query' (letters, digits, _ . - / :)")
    return value


def _check_id(value: str) -> str:
    if not _ID_RE.match(value):
        raise ValueError("an entry id is a name like 'twx.act#3' (letters, digits, _ . - / : #)")
    return value


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0/C1 controls except tab and newline


def _clean_text(value: str) -> str:
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    value = _CONTROL.sub("", value).strip()
    if not value:
        raise ValueError("the text of an entry must not be empty")
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"the text of an entry is limited to {MAX_TEXT_CHARS} characters")
    return value


def clean_when(value: str | None) -> str | None:
    """Normalise an applicability condition: strip, drop a leading "when", empty means unconditional."""
    if value is None:
        return None
    value = " ".join(_CONTROL.sub("", value).split())
    if value.lower().startswith("when "):
        value = value[5:].lstrip()
    value = value.rstrip(" ,;:")
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"a condition is limited to {MAX_TEXT_CHARS} characters")
    return value or None


RouteName = Annotated[str, AfterValidator(_check_route)]
EntryId = Annotated[str, AfterValidator(_check_id)]
EntryText = Annotated[str, AfterValidator(_clean_text)]
Condition = Annotated[str | None, AfterValidator(clean_when)]


class EntryKind(str, Enum):
    correction = "correction"
    rule = "rule"
    document_section = "document_section"
    example = "example"  # a worked input -> output from a successful rollout (rendered under "Example:")


def check_example_text(kind: "EntryKind | str", text: str | None) -> None:
    """Raise ValueError if an ``example`` entry's text is longer than :data:`MAX_EXAMPLE_CHARS`."""
    if text is not None and kind in (EntryKind.example, "example") and len(text) > MAX_EXAMPLE_CHARS:
        raise ValueError(f"the text of an example entry is limited to {MAX_EXAMPLE_CHARS} characters "
                         f"(got {len(text)})")


class EntryStatus(str, Enum):
    active = "active"      # rendered into the prompt
    disabled = "disabled"  # kept for review, not rendered


class Provenance(BaseModel):
    """Where an entry came from: the learning iteration, the traces that motivated it, and who wrote it."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    source: str = Field(default="human", description="'human' or the learning method that proposed the entry")
    iteration: int | None = Field(default=None, ge=0, description="learning iteration that created the entry")
    revised_iteration: int | None = Field(default=None, ge=0, description="iteration of the last edit or merge")
    trace_ids: list[str] = Field(default_factory=list, description="ids of the traces that motivated the entry")
    reason: str | None = Field(default=None, description="why the method added the entry (its add operation's "
                               "reason), for a reviewer")


class Selection(BaseModel):
    """How a module call's entries are chosen from a route (:mod:`nlgrad.policy.relevance`), recorded with the
    policy so that every reader selects as the method that learned it did. ``patterns``: conditional entries by
    their ``match`` (``k`` caps them per call); ``retrieval``: the top ``k`` entries by embedding similarity to the
    input plus ``utility_weight`` x a utility bonus (JERP's rule pool); ``examples``: the ``k`` worked examples whose
    input is nearest the call's (:mod:`nlgrad.policy.example_selection`), other entries as ``patterns``.
    ``examples_as``: ``turns`` shows the chosen ``example`` entries as prior user / assistant turns of the
    conversation (the way few-shot demos are shown), ``lines`` as lines of the policy text."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["patterns", "retrieval", "examples"] = "patterns"
    examples_as: Literal["lines", "turns"] = "lines"
    k: int | None = Field(default=None, ge=1, le=64, description="entries per call at most (None: no cap)")
    utility_weight: float = Field(default=0.1, ge=0.0, le=10.0)
    embedder: Literal["auto", "minilm", "lexical"] = Field(default="auto", description="retrieval's embeddings")


class PolicyEntry(BaseModel):
    """One route-local correction. ``id`` may be omitted in hand-written files; it is filled deterministically."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: EntryId | None = None
    text: EntryText
    when: Condition = None
    match: list[str] = Field(default_factory=list, description="patterns of a module call's input that make the "
                             "entry apply (a word or phrase, or a regular expression; case-insensitive); empty: "
                             "always shown. See nlgrad.policy.relevance")
    kind: EntryKind = EntryKind.correction
    status: EntryStatus = EntryStatus.active
    support: int = Field(default=1, ge=0, description="how many times this correction was proposed")
    helpful: int = Field(default=0, ge=0, description="votes that the entry helped")
    harmful: int = Field(default=0, ge=0, description="votes that the entry hurt")
    provenance: Provenance = Field(default_factory=Provenance)

    @field_validator("match", mode="before")
    @classmethod
    def _patterns(cls, value: object) -> object:
        return [] if value is None else check_patterns(value)

    @field_validator("provenance", mode="before")
    @classmethod
    def _none_provenance(cls, value: object) -> object:
        return Provenance() if value is None else value

    @model_validator(mode="after")
    def _bounded_example(self) -> "PolicyEntry":
        check_example_text(self.kind, self.text)
        return self

    @property
    def utility(self) -> int:
        """helpful - harmful: the score used to order rendering and to choose what to evict."""
        return self.helpful - self.harmful

    @property
    def active(self) -> bool:
        return self.status is EntryStatus.active


def split_seq_id(entry_id: str) -> tuple[str, int] | None:
    """``"twx.act#12"`` -> ``("twx.act", 12)``; ``None`` for ids of another shape."""
    match = _SEQ_ID_RE.match(entry_id)
    if not match:
        return None
    return match.group("route"), int(match.group("n"))


def id_sort_key(entry_id: str | None) -> tuple[str, int, str]:
    """Natural order for ids: ``twx.act#2`` before ``twx.act#10``."""
    entry_id = entry_id or ""
    parts = split_seq_id(entry_id)
    if parts is None:
        return (entry_id, -1, entry_id)
    return (parts[0], parts[1], entry_id)
