"""Usage ledger: calls, tokens, cache hits, retries, cost and wall time per role."""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path


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
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, role: str, *, cached: bool, prompt_tokens: int = 0, completion_tokens: int = 0,
               cost_usd: float = 0.0, wall_s: float = 0.0, retries: int = 0, error: bool = False) -> None:
        with self._lock:
            usage = self.roles.setdefault(role, RoleUsage())
            if cached:
                usage.cached += 1
            elif not error:
                usage.calls += 1
                usage.prompt_tokens += prompt_tokens
                usage.completion_tokens += completion_tokens
                usage.cost_usd += cost_usd
                usage.wall_s += wall_s
            usage.retries += retries
            usage.errors += int(error)

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

    def save(self, path: str | Path) -> None:
        from nlgrad.files import write_json_atomic

        write_json_atomic(Path(path), self.to_dict())
