"""Batch samplers: which training tasks an iteration (an optimize run's) or a step (the companion trainer's) rolls
out. Both draw with :class:`SeededMinibatchSampler` by default, so a trainer run and an optimize run with one seed
see the same batches; a method may swap in its own :class:`BatchSampler` (``run_optimize(sampler=...)``)."""

from __future__ import annotations

import random
from typing import Protocol, Sequence, TypeVar

T = TypeVar("T")


class BatchSampler(Protocol):
    """Contract: return ``k`` items of ``pool`` for ``iteration``; the same (pool, k, iteration) gives the same
    batch in every process, so a resumed run replays exactly the batches it would have drawn."""

    def sample(self, pool: Sequence[T], k: int, iteration: int) -> list[T]: ...


class SeededMinibatchSampler:
    """Uniform sample without replacement, seeded by (seed, iteration)."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def sample(self, pool: Sequence[T], k: int, iteration: int) -> list[T]:
        rng = random.Random(f"{self.seed}:{iteration}")
        return rng.sample(list(pool), min(k, len(pool)))
