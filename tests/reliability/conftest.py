"""Fixtures of the reliability suite: the toy benchmark registered under the id ``toy``, a fake OpenAI server, and
settings that point every role at it (``openai/toy`` + ``api_base``), with a tiny retry backoff."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reliability_world as world  # noqa: E402
from reliability_helpers import TOY_KEY_ENV  # noqa: E402,F401

@pytest.fixture
def toy():
    """``toy`` is a benchmark id and a program name in the real registry for the test."""
    undo = world.install_toy_registry()
    yield
    undo()


@pytest.fixture(autouse=True)
def toy_key(monkeypatch, tmp_path):
    # The fake server accepts any key; litellm's openai provider needs one (see test_no_auth_server_needs_no_key).
    monkeypatch.setenv(TOY_KEY_ENV, "sk-toy-not-secret")
    monkeypatch.setenv("NLGRAD_HOME", str(tmp_path / "nlgrad-home"))


@pytest.fixture
def server():
    with world.FakeOpenAIServer() as srv:
        yield srv


