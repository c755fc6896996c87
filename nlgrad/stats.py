"""Small statistics used in summaries, gates and comparisons: means with bootstrap CIs, paired differences."""

from __future__ import annotations

import random
from dataclasses import dataclass
from statistics import fmean


@dataclass(frozen=True)
class Estimate:
    n: int
    mean: float
    lo: float
    hi: float

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.lo:.3f}, {self.hi:.3f}] (n={self.n})"

    def to_dict(self) -> dict:
        return {"n": self.n, "mean": self.mean, "ci95": [self.lo, self.hi]}


def bootstrap_ci(values: list[float], *, resamples: int = 2000, level: float = 0.95, seed: int = 0) -> Estimate:
    """Mean and percentile-bootstrap CI. Deterministic for a given seed. n=0 gives NaNs; n=1 a zero-width CI."""
    n = len(values)
    if n == 0:
        nan = float("nan")
        return Estimate(0, nan, nan, nan)
    mean = fmean(values)
    if n == 1 or min(values) == max(values):
        return Estimate(n, mean, mean, mean)
    rng = random.Random(seed)
    means = sorted(fmean(rng.choices(values, k=n)) for _ in range(resamples))
    alpha = (1 - level) / 2
    lo = means[int(alpha * (resamples - 1))]
    hi = means[int((1 - alpha) * (resamples - 1))]
    return Estimate(n, mean, lo, hi)


def paired_comparison(candidate: dict[str, float], baseline: dict[str, float]) -> dict:
    """Per-item scores of a candidate against a baseline over the items both have (in sorted order): the mean paired
    difference and its 95% CI (rounded to 4 places), and how many items it won and lost."""
    ids = sorted(set(candidate) & set(baseline))
    diff = paired_difference([candidate[i] for i in ids], [baseline[i] for i in ids])
    return {"diff": round(diff.mean, 4), "diff_ci95": [round(diff.lo, 4), round(diff.hi, 4)],
            "won": sum(candidate[i] > baseline[i] for i in ids), "lost": sum(candidate[i] < baseline[i] for i in ids)}


def paired_difference(candidate: list[float], baseline: list[float], **kwargs) -> Estimate:
    """Mean of candidate[i] - baseline[i] over paired items, with a bootstrap CI."""
    if len(candidate) != len(baseline):
        raise ValueError(f"paired lists differ in length: {len(candidate)} vs {len(baseline)}")
    return bootstrap_ci([c - b for c, b in zip(candidate, baseline)], **kwargs)
