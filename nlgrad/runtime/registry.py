"""Find benchmarks and programs by name without the core importing any specific one.

Built-ins are listed in ``nlgrad.benchmarks.CATALOG`` / ``nlgrad.programs.CATALOG`` (dotted ``module:factory``
strings, imported lazily); third-party packages add more through the entry-point groups ``nlgrad.benchmarks`` and
``nlgrad.programs``. A benchmark id is ``family/variant`` (e.g. ``twx/coin``); the factory gets the variant.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from nlgrad.errors import BenchmarkError, ConfigError


def _catalog(kind: str) -> dict[str, str]:
    module = importlib.import_module(f"nlgrad.{kind}")
    catalog = dict(getattr(module, "CATALOG", {}))
    for ep in entry_points(group=f"nlgrad.{kind}"):
        catalog.setdefault(ep.name, ep.value)
    return catalog


def _load(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def benchmark_ids() -> list[str]:
    return sorted(_catalog("benchmarks"))


def load_benchmark(benchmark_id: str, **options: Any):
    """``twx/coin`` -> catalog entry ``twx`` called with variant ``coin``; exact ids match first."""
    catalog = _catalog("benchmarks")
    family, _, variant = benchmark_id.partition("/")
    if benchmark_id in catalog:
        return _load(catalog[benchmark_id])(**options)
    if family in catalog:
        return _load(catalog[family])(variant or None, **options)
    raise BenchmarkError(f"unknown benchmark {benchmark_id!r}; known: {', '.join(sorted(catalog))}")


def program_names() -> list[str]:
    return sorted(_catalog("programs"))


def load_program(name: str, benchmark=None, **options: Any):
    catalog = _catalog("programs")
    if name not in catalog:
        raise ConfigError(f"unknown program; known: {', '.join(sorted(catalog))}", field="program", value=name)
    return _load(catalog[name])(benchmark=benchmark, **options)
