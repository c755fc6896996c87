"""Shared fixtures. Unit tests script litellm through its own ``mock_response``; e2e tests use the real local model."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
import pytest  # noqa: E402

from nlgrad.config import RoleConfig, Settings  # noqa: E402
from nlgrad.lm.client import LM  # noqa: E402


class ScriptedReplies:
    """Replaces litellm.completion by one that serves scripted replies (strings or exceptions) via mock_response."""

    def __init__(self, replies, real=None):
        self.replies = list(replies)
        self.calls: list[dict] = []
        self._real = real or litellm.completion

    def __call__(self, *args, **kwargs):
        self.calls.append(kwargs)
        if not self.replies:
            raise AssertionError("more LM calls than scripted replies")
        reply = self.replies.pop(0)
        kwargs["mock_response"] = reply
        return self._real(*args, **kwargs)


@pytest.fixture
def script(monkeypatch):
    """``script(["a", "b"])`` makes the next LM calls return "a" then "b"; returns the recorder."""

    real = litellm.completion  # installing twice must not chain recorders

    def install(replies):
        recorder = ScriptedReplies(replies, real)
        monkeypatch.setattr(litellm, "completion", recorder)
        return recorder

    return install


@pytest.fixture
def settings(tmp_path) -> Settings:
    """Settings with a remote-style model string (never reached: replies are mocked) and a temp cache."""
    role = RoleConfig(model="openai/test-model", max_tokens=64)
    return Settings(roles={"agent": role, "critic": role}, cache_dir=tmp_path / "cache", runs_dir=tmp_path / "runs",
                    retries=3, backoff_base_s=0.001, backoff_max_s=0.002)


@pytest.fixture
def make_lm(settings):
    def build(**kwargs) -> LM:
        return LM(kwargs.pop("settings", settings), sleep=lambda s: None, **kwargs)

    return build
