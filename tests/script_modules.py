"""Load a file of scripts/ as a module by its path (scripts/ is not a package, and a script must not import its
siblings), for tests of the scripts' pure functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """``load_script("headroom")`` is ``scripts/headroom.py`` run as a module (its ``main`` is not called)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
