"""Fixtures for tests/compare: the fake LM world and the toy benchmark patched into the registries."""

from __future__ import annotations

import litellm
import pytest

from compare_helpers import ShoutBenchmark, ShoutProgram, fake_reply


@pytest.fixture
def fake_world(monkeypatch):
    real = litellm.completion
    calls = []

    def fake(*args, **kwargs):
        calls.append(kwargs["messages"])
        kwargs["mock_response"] = fake_reply(kwargs["messages"])
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", fake)
    return calls


@pytest.fixture
def shout(monkeypatch, tmp_path):
    """Patch the registries the optimizer and the harness use so that id 'shout' is the toy benchmark."""
    import nlgrad.compare.harness as harness
    import nlgrad.optimize as optimize

    human = tmp_path / "human.yaml"
    human.write_text("schema_version: 1\nprogram: shout\nroutes:\n  shout.say:\n    - text: \"Answer in UPPERCASE.\"\n")
    bench = ShoutBenchmark(human_policy=human)
    for module in (optimize, harness):
        monkeypatch.setattr(module, "load_benchmark", lambda bid, **kw: bench)
        monkeypatch.setattr(module, "load_program", lambda name, benchmark=None, **kw: ShoutProgram())
    return bench
