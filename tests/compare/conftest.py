"""Fixtures for tests/compare: the fake LM world and the toy benchmark patched into the registries."""

from __future__ import annotations

import pytest

from compare_helpers import ShoutBenchmark, ShoutProgram, fake_reply
from fake_lm import install_fake_lm, serve_toy


@pytest.fixture
def fake_world(monkeypatch):
    return install_fake_lm(monkeypatch, fake_reply)


@pytest.fixture
def shout(monkeypatch, tmp_path):
    """Patch the registries the optimizer and the harness use so that id 'shout' is the toy benchmark."""
    import nlgrad.compare.harness as harness

    human = tmp_path / "human.yaml"
    human.write_text("schema_version: 1\nprogram: shout\nroutes:\n  shout.say:\n    - text: \"Answer in UPPERCASE.\"\n")
    bench = ShoutBenchmark(human_policy=human)
    serve_toy(monkeypatch, bench, ShoutProgram, modules=(harness,))
    return bench
