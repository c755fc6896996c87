"""Usage ledger: calls, tokens, cache hits, retries, cost and wall time per role."""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nlgrad.files import read_jsonl
from nlgrad.journal import append_line


@dataclass
class RoleUsage:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    retries: int = 0
    errors: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: "RoleUsage") -> None:
        for name in asdict(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Ledger:
    """Thread-safe usage totals per role. ``calls`` counts calls that reached the model (cache misses)."""

    roles: dict[str, RoleUsage] = field(default_factory=dict)
    journal: Path | None = field(default=None, compare=False)  # append one JSON line per recorded delta
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, role: str, *, cached: bool, prompt_tokens: int = 0, completion_tokens: int = 0,
               cost_usd: float = 0.0, wall_s: float = 0.0, retries: int = 0, error: bool = False) -> None:
        delta = RoleUsage(retries=retries, errors=int(error))
        if cached:
            delta.cached = 1
        elif not error:
            delta.calls, delta.prompt_tokens, delta.completion_tokens = 1, prompt_tokens, completion_tokens
            delta.cost_usd, delta.wall_s = cost_usd, wall_s
        with self._lock:
            self.roles.setdefault(role, RoleUsage()).add(delta)
            self._journal({role: delta})

    def _journal(self, deltas: dict[str, RoleUsage]) -> None:
        """Append the deltas as one line (a torn tail left by a killed process is cut off first, so no call is lost)."""
        if self.journal is None or not deltas:
            return
        line = json.dumps({name: asdict(u) for name, u in deltas.items()}, sort_keys=True)
        append_line(self.journal, line, fsync=False)

    @classmethod
    def replay(cls, path: str | Path) -> "Ledger":
        """Totals of a journal written by a ledger with ``journal=path`` (a missing file is an empty ledger)."""
        ledger = cls()
        path = Path(path)
        if not path.exists():
            return ledger
        for record in read_jsonl(path):  # skips the torn last line of a killed process
            for name, usage in record.items():
                ledger.roles.setdefault(name, RoleUsage()).add(RoleUsage(**usage))
        return ledger

    def total(self) -> RoleUsage:
        out = RoleUsage()
        with self._lock:
            for usage in self.roles.values():
                out.add(usage)
        return out

    def to_dict(self) -> dict:
        with self._lock:
            roles = {name: asdict(u) for name, u in sorted(self.roles.items())}
        return {"roles": roles, "total": asdict(self.total())}

    @classmethod
    def from_dict(cls, data: dict) -> "Ledger":
        return cls(roles={name: RoleUsage(**u) for name, u in data.get("roles", {}).items()})

    def merge(self, other: "Ledger") -> None:
        with self._lock:
            for name, usage in other.roles.items():
                self.roles.setdefault(name, RoleUsage()).add(usage)
            self._journal(dict(other.roles))

    def save(self, path: str | Path) -> None:
        from nlgrad.files import write_json_atomic

        write_json_atomic(Path(path), self.to_dict())
