"""Budgets: stop optimizing once calls, tokens, dollars or wall time reach a limit (checked between steps)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from nlgrad.errors import ConfigError
from nlgrad.lm.ledger import Ledger


def parse_duration(text: str | None) -> float | None:
    """'90', '90s', '30m', '1.5h' -> seconds."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(text))
    if not match:
        raise ConfigError("a duration looks like 90s, 30m or 1.5h", field="--budget-time", value=text)
    value, unit = float(match.group(1)), match.group(2) or "s"
    return value * {"s": 1, "m": 60, "h": 3600}[unit]


@dataclass(frozen=True)
class Budget:
    calls: int | None = None
    tokens: int | None = None
    usd: float | None = None
    time_s: float | None = None

    def __post_init__(self) -> None:
        """A limit of zero or less would end the run at once as "finished": refuse it, naming the option."""
        for name, option in (("calls", "--budget-calls"), ("tokens", "--budget-tokens"), ("usd", "--budget-usd"),
                             ("time_s", "--budget-time")):
            value = getattr(self, name)
            if value is not None and not value > 0:  # `not >` also refuses NaN
                raise ConfigError("a budget must be greater than zero (leave it out for no limit)", field=option,
                                  value=value)

    def exceeded(self, ledger: Ledger, elapsed_s: float) -> str | None:
        """The first limit reached, in words, or None. Calls count real LM calls (cache hits are free)."""
        total = ledger.total()
        if self.calls is not None and total.calls >= self.calls:
            return f"call budget reached ({total.calls} >= {self.calls})"
        if self.tokens is not None and total.total_tokens >= self.tokens:
            return f"token budget reached ({total.total_tokens} >= {self.tokens})"
        if self.usd is not None and total.cost_usd >= self.usd:
            return f"cost budget reached (${total.cost_usd:.4f} >= ${self.usd})"
        if self.time_s is not None and elapsed_s >= self.time_s:
            return f"time budget reached ({elapsed_s:.0f}s >= {self.time_s:.0f}s)"
        return None
