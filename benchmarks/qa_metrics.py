"""Shared pieces of the QA benchmarks (hotpotqa, hover, locomo): SQuAD/HotpotQA normalization, exact match, token
F1, refusal detection, and where the data directories are found. Cleaning an LM reply (``clean_reply``) and reading
any output as text (``as_text``) are in :mod:`nlgrad.text`, which the QA programs share.

Normalization follows the official SQuAD / HotpotQA evaluation scripts: lowercase, drop punctuation, drop the
articles a/an/the, collapse whitespace. Token F1 follows ``hotpot_evaluate_v1.py``: when either side normalizes to
``yes``/``no``/``noanswer`` and the two differ, F1 is 0. Every function accepts any value (None, numbers, dicts) and
never raises on malformed agent output.
"""

from __future__ import annotations

import json
import os
import re
import string
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from nlgrad.errors import BenchmarkError
from nlgrad.text.clean import as_text

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
_SPECIAL = ("yes", "no", "noanswer")


def normalize_answer(value: Any) -> str:
    """SQuAD/HotpotQA normalization of any value (None and junk become "" or their string form)."""
    text = as_text(value).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: Any, gold: Any) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)


def token_f1(prediction: Any, gold: Any) -> float:
    """Token-level F1 of normalized answers (official HotpotQA rule for yes/no/noanswer)."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    if not pred_tokens or not ref_tokens:
        return float(pred_tokens == ref_tokens)
    common = Counter(pred_tokens) & Counter(ref_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


# ---- refusal detection (LoCoMo adversarial questions) --------------------------------------------------------
_REFUSAL = re.compile(
    r"\b(not mentioned|never mentioned|isn'?t mentioned|wasn'?t mentioned|not (?:stated|specified|discussed|said|"
    r"given|provided|available|known|clear|answerable)|no (?:information|mention|info|evidence|record|answer)|"
    r"(?:does|did|do) not (?:say|mention|know|specify)|(?:doesn'?t|didn'?t|don'?t) (?:say|mention|know|specify)|"
    r"unknown|unanswerable|(?:cannot|can'?t|could not|couldn'?t|unable to) (?:be )?(?:answer(?:ed)?|determined?|"
    r"tell|known?|found|find|say|said)|no one knows|n/?a)\b",
    re.IGNORECASE,
)


def is_refusal(value: Any) -> bool:
    """True when an answer says the information is not available ("Not mentioned", "No information", ...)."""
    text = as_text(value).strip()
    if not text:
        return False
    return bool(_REFUSAL.search(text.replace("’", "'")))


# ---- data directories ------------------------------------------------------------------------------------------
def resolve_data_dir(name: str, env_var: str, data_dir: str | Path | None = None,
                     required: tuple[str, ...] = ()) -> Path:
    """Where a benchmark's data lives: ``data_dir``, else ``$env_var``, else ``../shared/data/<name>`` relative to
    the current directory, else ``shared/data/<name>`` beside the repository. Raises :class:`BenchmarkError` that
    names every place tried and the env var when none holds the ``required`` files."""
    if data_dir is not None:
        candidates = [Path(data_dir)]
    elif os.environ.get(env_var):
        candidates = [Path(os.environ[env_var])]
    else:
        candidates = [Path.cwd() / ".." / "shared" / "data" / name,
                      Path(__file__).resolve().parents[1].parent / "shared" / "data" / name]
    for path in candidates:
        if path.is_dir() and all((path / f).is_file() for f in required):
            return path.resolve()
    tried = ", ".join(str(p) for p in candidates)
    files = f" with {', '.join(required)}" if required else ""
    raise BenchmarkError(
        f"{name} data not found: no directory{files} at {tried}. Pass data_dir=... or set {env_var} to the folder "
        f"that holds the {name} files (the project keeps them in shared/data/{name}, see its SOURCE.md)."
    )


def read_jsonl(path: Path, required: tuple[str, ...] = (), unique: str | None = "id") -> Iterator[dict[str, Any]]:
    """Rows of a JSON-lines file; a bad line, a row without one of the ``required`` fields, or a row whose
    ``unique`` field (default ``id``; compared as text) repeats an earlier row's raises :class:`BenchmarkError`
    naming the file, the line and the field or id: task ids are built from it, and results, traces and resume are
    keyed by the task id."""
    seen: dict[str, int] = {}
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise BenchmarkError(f"cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchmarkError(f"{path} line {number} is not valid JSON: {exc.msg}") from None
            if required and not isinstance(row, dict):
                raise BenchmarkError(f"{path} line {number}: a row must be a JSON object, got {type(row).__name__}")
            missing = [f for f in required if f not in row]
            if missing:
                raise BenchmarkError(f"{path} line {number}: the row (id {row.get('id')!r}) has no field "
                                     f"{missing[0]!r}")
            if unique is not None and isinstance(row, dict) and unique in row:
                key = str(row[unique])
                if key in seen:
                    raise BenchmarkError(f"{path} line {number}: duplicate {unique} {key!r} (also on line "
                                         f"{seen[key]}); each row needs its own {unique}, since the task id is made "
                                         "from it")
                seen[key] = number
            yield row


def human_policy_path(family: str) -> Path:
    """``benchmarks/human_policies/<family>.yaml`` (via importlib.resources, so it works when installed)."""
    from importlib.resources import files

    return Path(str(files("nlgrad.benchmarks").joinpath(f"human_policies/{family}.yaml")))
