"""Compare nlgrad with what a user would otherwise use: every method on the same agent, budget, seeds and test split.

``nlgrad compare`` runs :class:`~nlgrad.compare.harness.Harness`; results are counted as described in
:mod:`nlgrad.compare.results`, aggregated in :mod:`nlgrad.compare.table`, drawn by :mod:`nlgrad.compare.plots` and
rendered into one self-contained ``report.html`` by :mod:`nlgrad.compare.html`. ``nlgrad report`` renders the same
HTML for one optimize run. matplotlib (extra ``report``) is imported only when pictures are drawn.
"""

from nlgrad.compare.harness import CompareConfig, Harness
from nlgrad.compare.results import CompareResults, SeedRecord

__all__ = ["CompareConfig", "Harness", "CompareResults", "SeedRecord"]
