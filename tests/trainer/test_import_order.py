"""JERP, rule retrieval and the trainer import each other's modules: each must import first in a fresh interpreter
(an import cycle shows up as an ImportError for one of them)."""

import importlib.util
import subprocess
import sys

import pytest

MODULES = ["nlgrad.methods.rule_retrieval", "nlgrad.methods.jerp", "nlgrad.trainer.rule_retrieval",
           "nlgrad.trainer.jerp_weights", "nlgrad.methods.base"]
WITH_TORCH = ["nlgrad.trainer.loop", "nlgrad.trainer.evaluation"]  # import torch at load (the extra 'train')


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
