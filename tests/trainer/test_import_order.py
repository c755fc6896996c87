"""Modules that several layers share (rule retrieval, the sampler, the executor factory, the test-split guard) live
in the runtime, JERP imports nothing of the trainer, and the trainer nothing of the methods: each module must import
first in a fresh interpreter (an import cycle shows up as an ImportError for one of them), and the one-way layers
hold in the source."""

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

MODULES = ["nlgrad.runtime.rule_retrieval", "nlgrad.methods.jerp", "nlgrad.methods.base", "nlgrad.runtime.sampler",
           "nlgrad.runtime.split_guard", "nlgrad.optimize"]
WITH_TORCH = ["nlgrad.trainer.loop", "nlgrad.trainer.evaluation", "nlgrad.trainer.weight_learner"]  # torch at load
PACKAGE = Path(__file__).resolve().parents[2] / "nlgrad"


def _import_alone(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"import {module} failed first:\n{done.stderr[-2000:]}"


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_first(module):
    _import_alone(module)


@pytest.mark.parametrize("module", WITH_TORCH)
def test_trainer_module_imports_first(module):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs the extra 'train' (torch)")
    _import_alone(module)


def _imports(package: str) -> dict[str, set[str]]:
    """file -> the nlgrad modules it imports (anywhere in the file, functions included)."""
    out = {}
    for path in sorted((PACKAGE / package).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        out[str(path.relative_to(PACKAGE.parent))] = {n for n in names if n.startswith("nlgrad.")}
    return out


@pytest.mark.parametrize("package, forbidden", [
    ("methods", ("nlgrad.trainer", "nlgrad.optimize", "nlgrad.compare", "nlgrad.evaluate")),
    ("trainer", ("nlgrad.methods", "nlgrad.optimize", "nlgrad.compare")),
    ("runtime", ("nlgrad.methods", "nlgrad.trainer", "nlgrad.credit", "nlgrad.optimize", "nlgrad.compare")),
])
def test_layers_import_one_way(package, forbidden):
    wrong = {f: sorted(n for n in names if n.startswith(forbidden)) for f, names in _imports(package).items()}
    assert not {f: n for f, n in wrong.items() if n}
