"""PolicyMemory: one version of a policy — per-route lists of entries plus lineage metadata.

On disk a memory is a canonical JSON file (sorted keys, two-space indent, one entry per block) or a hand-written
YAML file; see :mod:`nlgrad.policy.io`. ``PolicyMemory`` satisfies the runtime's policy protocol
``render(route) -> str``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from nlgrad.policy.relevance import EntrySelector
from nlgrad.policy.render import ordered_active, render_call_parts, render_entries, render_line
from nlgrad.policy.schema import (SCHEMA_VERSION, SUPPORTED_SCHEMA_VERSIONS, FieldProblem, PolicyEntry, RouteName,
                                  Selection, split_seq_id)
from nlgrad.policy.tokens import count_tokens


class PolicyMemory(BaseModel):
    """A versioned set of route-local natural-language corrections for one program (and benchmark)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_version: int = Field(default=SCHEMA_VERSION, description="on-disk format version")
    program: str = Field(min_length=1, description="the program the policy was learned for, e.g. 'twx_react'")
    benchmark: str | None = Field(default=None, description="the benchmark it was learned on, e.g. 'twx/coin'")
    method: str = Field(default="human", min_length=1, description="how this version was produced")
    version: int = Field(default=0, ge=0, description="version number in its store; 0 = not committed yet")
    parent: int | None = Field(default=None, ge=0, description="version this one was derived from")
    created: datetime | None = Field(default=None, description="when this version was committed (UTC)")
    scores: dict[str, float] = Field(default_factory=dict, description="scores at acceptance, e.g. {'dev': 0.62}")
    n_ops: int = Field(default=0, ge=0, description="number of operations applied to the parent to get this version")
    note: str = Field(default="", description="free-form note recorded at commit")
    last_ids: dict[RouteName, int] = Field(default_factory=dict,
                                           description="highest '<route>#<n>' number ever issued per route")
    selection: Selection | None = Field(default=None, description="how a call's entries are chosen (None: "
                                        "conditional entries by their match patterns)")
    by_route: dict[RouteName, list[PolicyEntry]] = Field(default_factory=dict, alias="routes")

    @field_validator("schema_version")
    @classmethod
    def _known_schema(cls, value: int) -> int:
        if value not in SUPPORTED_SCHEMA_VERSIONS:
            raise ValueError(f"unknown schema version (this nlgrad reads {', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))})")
        return value

    @field_validator("last_ids")
    @classmethod
    def _non_negative(cls, value: dict[str, int]) -> dict[str, int]:
        for route, n in value.items():
            if n < 0:
                raise FieldProblem("an id counter must be >= 0", field=f"last_ids.{route}", value=n)
        return value

    @model_validator(mode="after")
    def _fill_and_check_ids(self) -> "PolicyMemory":
        seen: dict[str, str] = {}
        for route, entries in self.by_route.items():
            for i, entry in enumerate(entries):
                if entry.id is None:
                    continue
                if entry.id in seen:
                    raise FieldProblem(f"duplicate entry id (also used at {seen[entry.id]})",
                                       field=f"routes.{route}.{i}.id", value=entry.id)
                seen[entry.id] = f"routes.{route}.{i}.id"
        for route in sorted(self.by_route):
            for entry in self.by_route[route]:
                if entry.id is None:
                    entry.id = self.next_id(route, taken=seen)
                    seen[entry.id] = route
            self._bump_counter(route)
        return self

    # ----------------------------------------------------------------------------------------------- identity
    def _highest_id(self, route: str) -> int:
        """The largest ``<route>#<n>`` number in use or recorded in ``last_ids`` (0 if none)."""
        high = self.last_ids.get(route, 0)
        for entry in self.by_route.get(route, []):
            parts = split_seq_id(entry.id or "")
            if parts is not None and parts[0] == route:
                high = max(high, parts[1])
        return high

    def _bump_counter(self, route: str) -> None:
        high = self._highest_id(route)
        if high:
            self.last_ids[route] = high

    def next_id(self, route: str, *, taken: dict[str, str] | set[str] | None = None) -> str:
        """The next unused ``<route>#<n>`` id. Numbers are never reused, even after a delete."""
        if taken is None:
            taken = {e.id for entries in self.by_route.values() for e in entries if e.id}
        n = self._highest_id(route)
        while True:
            n += 1
            candidate = f"{route}#{n}"
            if candidate not in taken:
                self.last_ids[route] = n
                return candidate

    # ----------------------------------------------------------------------------------------------- queries
    def routes(self) -> list[str]:
        """Routes that have at least one entry (any status), sorted."""
        return sorted(route for route, entries in self.by_route.items() if entries)

    def entries(self, route: str) -> list[PolicyEntry]:
        return list(self.by_route.get(route, []))

    def active_entries(self, route: str) -> list[PolicyEntry]:
        return [e for e in self.by_route.get(route, []) if e.active]

    def find(self, entry_id: str) -> tuple[str, int, PolicyEntry] | None:
        """``(route, index, entry)`` of the entry with this id, or None."""
        for route, entries in self.by_route.items():
            for i, entry in enumerate(entries):
                if entry.id == entry_id:
                    return route, i, entry
        return None

    def tokens(self, route: str) -> int:
        """Tokens of the route's rendered text (the quantity bounded by ``max_tokens_per_route``)."""
        return sum(count_tokens(render_line(e)) for e in self.active_entries(route))

    def n_entries(self, *, active_only: bool = True) -> int:
        """Number of (active) entries over all routes."""
        return sum(1 for entries in self.by_route.values() for e in entries if e.active or not active_only)

    # ----------------------------------------------------------------------------------------------- rendering
    def shown_entries(self, route: str, for_input: str | None = None,
                      selector: EntrySelector | None = None) -> list[PolicyEntry]:
        """The active entries of ``route`` in render order; given ``for_input`` (a module call's input text), only
        those that concern it: conditional entries (``match`` patterns) whose condition holds, and every
        unconditional one (:mod:`nlgrad.policy.relevance`; ``selector`` defaults to the one ``selection`` names)."""
        entries = ordered_active(self.by_route.get(route, []))
        if for_input is None:
            return entries
        from nlgrad.policy.selectors import selector_for  # loads numpy: only when a policy is rendered per input

        return (selector or selector_for(self.selection)).select(entries, for_input)

    def render(self, route: str, for_input: str | None = None, selector: EntrySelector | None = None) -> str:
        """The exact text injected into a module's prompt for ``route``; ``""`` if it has no active entries. With
        ``for_input``, only the entries that concern that input (see :meth:`shown_entries`)."""
        if for_input is None:
            return render_entries(self.by_route.get(route, []))
        return self.render_shown(route, for_input, selector)[0]

    def render_shown(self, route: str, for_input: str | None,
                     selector: EntrySelector | None = None) -> tuple[str, list[str]]:
        """:meth:`render` and the ids of the entries it shows, from one selection (:meth:`shown_entries`): what a
        module call is given and what its trace records (the runtime's ``SelectingPolicySource``)."""
        entries = self.shown_entries(route, for_input, selector)
        return "\n".join(render_line(e) for e in entries), [e.id for e in entries]

    @property
    def examples_as_turns(self) -> bool:
        """Whether this policy shows its ``example`` entries as prior conversation turns (``selection.examples_as``)."""
        return self.selection is not None and self.selection.examples_as == "turns"

    def render_call(self, route: str, for_input: str | None,
                    selector: EntrySelector | None = None) -> tuple[str, list[str], list[tuple[str, str]]]:
        """:meth:`render_shown` and the ``(user, assistant)`` turns of the examples the call is shown, where the
        policy shows examples as turns (:attr:`examples_as_turns`; then the text leaves them out)."""
        return render_call_parts(self.shown_entries(route, for_input, selector), self.examples_as_turns)

    def apply_to(self, prompt_text: str, route: str) -> str:
        """``prompt_text`` with this route's delimited policy block inserted or replaced (idempotent)."""
        from nlgrad.policy.blocks import apply_block

        return apply_block(prompt_text, route, self.render(route), self.version)

    # ----------------------------------------------------------------------------------------------- files
    @classmethod
    def load(cls, path_or_dir: str | Path, version: int | None = None) -> "PolicyMemory":
        """Load a version from a policy directory (latest by default) or a single JSON/YAML policy file."""
        from nlgrad.policy import load_policy  # the package's public loader (files and versioned directories)

        return load_policy(path_or_dir, version=version)

    def to_json(self) -> str:
        """The canonical, line-diffable JSON text of this memory (what a version file contains)."""
        return dump_policy_json(self)

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the canonical JSON to ``path`` atomically (refuses to overwrite unless asked)."""
        from nlgrad.files import write_text_atomic

        path = Path(path)
        write_text_atomic(path, self.to_json(), overwrite=overwrite)
        return path


def dump_policy_json(memory: PolicyMemory) -> str:
    """Canonical JSON: sorted keys, two-space indent (one entry per block), UTF-8, trailing newline."""
    data = memory.model_dump(mode="json", by_alias=True)
    if data.get("selection") is None:  # the default selection is written without a key, as files before it were
        data.pop("selection", None)
    for entries in data.get("routes", {}).values():
        for entry in entries:
            if not entry.get("match"):  # an unconditional entry is written without a ``match`` key
                entry.pop("match", None)
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
