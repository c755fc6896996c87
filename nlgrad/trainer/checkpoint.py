"""Checkpoints: trainable weights (LoRA adapters or the full model), optimizer, step and RNG states.

Layout under ``<out>/checkpoints/``: ``step-000004/`` (``weights.pt``, ``optimizer.pt``, ``state.json``,
``rng.pt``) written into a temporary directory and renamed when complete, then ``latest`` (the directory name) is
replaced atomically. A run killed at any point resumes from the last complete checkpoint; older ones beyond
``keep`` are deleted.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import torch

from nlgrad.files import write_json_atomic, write_text_atomic

LATEST = "latest"


def rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    try:
        import numpy as np

        state["numpy"] = np.random.get_state()
    except ImportError:  # pragma: no cover
        pass
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy as np

        np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def trainable_state(model) -> dict[str, torch.Tensor]:
    """The parameters that train (LoRA: the adapters only; full: every parameter), on CPU."""
    return {name: p.detach().to("cpu").clone() for name, p in model.named_parameters() if p.requires_grad}


def load_trainable_state(model, weights: dict[str, torch.Tensor]) -> None:
    params = dict(model.named_parameters())
    missing = [n for n, p in params.items() if p.requires_grad and n not in weights]
    unknown = [n for n in weights if n not in params]
    if missing or unknown:
        raise ValueError(f"checkpoint does not match the model: missing {missing[:3]}, unknown {unknown[:3]}")
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(value.to(params[name].device, params[name].dtype))


def save_checkpoint(root: Path, step: int, model, optimizer, state: dict[str, Any], *, keep: int = 2) -> Path:
    """Write checkpoint ``step`` (completed optimization steps) and point ``latest`` at it."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    name = f"step-{step:06d}"
    tmp = root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save(trainable_state(model), tmp / "weights.pt")
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(rng_state(), tmp / "rng.pt")
    write_json_atomic(tmp / "state.json", {**state, "step": step})
    final = root / name
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    write_text_atomic(root / LATEST, name + "\n")
    for old in sorted(p for p in root.glob("step-*") if p.is_dir())[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(root: Path) -> Path | None:
    pointer = Path(root) / LATEST
    if not pointer.exists():
        return None
    path = Path(root) / pointer.read_text(encoding="utf-8").strip()
    return path if (path / "state.json").exists() else None


def load_checkpoint(path: Path, model, optimizer, *, restore_rng: bool = True) -> dict[str, Any]:
    """Restore weights, optimizer and RNG from ``path``; returns its state.json."""
    path = Path(path)
    load_trainable_state(model, torch.load(path / "weights.pt", map_location="cpu", weights_only=True))
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True))
    if restore_rng:
        set_rng_state(torch.load(path / "rng.pt", map_location="cpu", weights_only=False))
    return json.loads((path / "state.json").read_text(encoding="utf-8"))
