"""Count every method's cost the same way: a metered LM (tokens including cache hits) and a rollout budget.

``run_optimize`` builds its own ``LM(settings)``; :func:`metered_optimize_lm` makes that LM a :class:`MeteredLM` for
the duration of one run, so the tokens of every call (agent, critic, optimizer, and the baselines' library calls,
which all go through ``ws.lm``) are also recorded in a *gross* ledger that counts cache hits at their original
token counts. :class:`RunBudget` is passed as ``run_optimize``'s budget: between iterations it persists the gross
ledger (so a resumed run keeps what its completed iterations cost) and stops the run once the rollouts recorded
under ``run/iter-*`` reach the limit.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Iterator

from nlgrad.compare.results import count_rollouts
from nlgrad.files import write_json_atomic
from nlgrad.lm.client import LOCAL_PREFIX, LM, Completion
from nlgrad.lm.ledger import Ledger
from nlgrad.methods.budget import Budget


def price(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """litellm's price of a call (0 for local models and models without a price)."""
    if model.startswith(LOCAL_PREFIX):
        return 0.0
    try:
        import litellm

        p, c = litellm.cost_per_token(model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        return float(p) + float(c)
    except Exception:  # noqa: BLE001 - unknown models have no price
        return 0.0


class MeteredLM(LM):
    """An ``LM`` that also records every completion, cached or not, in ``gross``."""

    def __init__(self, settings, *, gross: Ledger, **kwargs):
        super().__init__(settings, **kwargs)
        self.gross = gross

    def complete(self, role: str, messages, **kwargs) -> Completion:
        completion = super().complete(role, messages, **kwargs)
        cost = completion.cost_usd
        if completion.cached:
            cost = price(self.model_for(role), completion.prompt_tokens, completion.completion_tokens)
        self.gross.record(role, cached=False, prompt_tokens=completion.prompt_tokens,
                          completion_tokens=completion.completion_tokens, cost_usd=cost,
                          wall_s=completion.latency_s)
        return completion


@contextlib.contextmanager
def metered_optimize_lm(gross: Ledger) -> Iterator[None]:
    """Within the block, ``nlgrad.optimize.run_optimize`` builds a :class:`MeteredLM` writing to ``gross``."""
    import nlgrad.optimize as optimize

    original = optimize.LM
    optimize.LM = lambda settings, **kw: MeteredLM(settings, gross=gross, **kw)  # type: ignore[assignment]
    try:
        yield
    finally:
        optimize.LM = original  # type: ignore[assignment]


class GrossLedgerFile:
    """The gross ledger of one run: what earlier attempts recorded plus what this process records."""

    def __init__(self, path: Path):
        self.path = path
        previous = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        self.previous = Ledger.from_dict(previous)
        self.live = Ledger()

    def total(self) -> Ledger:
        total = Ledger.from_dict(self.previous.to_dict())
        total.merge(self.live)
        return total

    def save(self) -> Ledger:
        total = self.total()
        write_json_atomic(self.path, total.to_dict())
        return total


class RunBudget:
    """``run_optimize``'s budget hook: persists the gross ledger, then checks rollouts, gross tokens and more."""

    def __init__(self, work_dir: Path, gross: GrossLedgerFile, *, rollouts: int | None = None,
                 tokens: int | None = None, inner: Budget | None = None):
        self.work_dir, self.gross, self.rollouts, self.tokens = work_dir, gross, rollouts, tokens
        self.inner = inner

    def exceeded(self, ledger: Ledger, elapsed_s: float) -> str | None:
        total = self.gross.save()
        if self.rollouts is not None:
            done = count_rollouts(self.work_dir)
            if done >= self.rollouts:
                return f"rollout budget reached ({done} >= {self.rollouts})"
        if self.tokens is not None and total.total().total_tokens >= self.tokens:
            return f"token budget reached ({total.total().total_tokens} >= {self.tokens})"
        return self.inner.exceeded(ledger, elapsed_s) if self.inner is not None else None
