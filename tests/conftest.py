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


@pytest.fixture
def play_scripted(script, make_lm):
    """``play_scripted(benchmark_id, replies, step_cap)`` runs ``twx_react`` (or ``program``) on the benchmark's first
    dev task with scripted LM replies; returns ``(result, task_result, trace)``, after checking it ran without error."""
    from nlgrad.runtime.executor import Executor
    from nlgrad.runtime.registry import load_benchmark, load_program

    def play(benchmark_id: str, replies, step_cap: int, program: str = "twx_react"):
        script(replies)
        bench = load_benchmark(benchmark_id)
        result = Executor(benchmark=bench, program=load_program(program, bench), lm=make_lm(), step_cap=step_cap,
                          progress=False, keep_traces=True).run(bench.tasks("dev", 1))
        (r,) = result.results
        assert r.error is None, r.error
        return result, r, result.traces[r.task_id]

    return play

