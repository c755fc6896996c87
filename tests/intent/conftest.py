"""Fixtures of the toy intent world (tests/intent/intent_world.py)."""

import pytest

from fake_lm import install_fake_lm
from intent_world import copy_nearest_demo, write_data


@pytest.fixture
def intent_data(tmp_path, monkeypatch):
    root = write_data(tmp_path / "banking77")
    monkeypatch.setenv("NLGRAD_BANKING77_DIR", str(root))
    return root


@pytest.fixture
def copying_agent(monkeypatch):
    return install_fake_lm(monkeypatch, copy_nearest_demo)
