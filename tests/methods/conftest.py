"""The toy static benchmark of tests/fake_lm.py and its fake LM world (served via mock_response) as fixtures."""

from __future__ import annotations

import pytest

from fake_lm import (UPPER_RULE, ShoutBenchmark, ShoutProgram, correction, install_fake_lm, nlpg_reply,
                     serve_toy)

CORRECTIONS = [correction(UPPER_RULE, 3),
               correction("Mention word number 7 first.", 2),  # copies instance details
               correction("Add a friendly greeting.", 1)]  # one-off: support 1


def fake_reply(messages) -> str:
    return nlpg_reply(messages, "shout.say", CORRECTIONS)


@pytest.fixture
def fake_world(monkeypatch):
    return install_fake_lm(monkeypatch, fake_reply)


@pytest.fixture
def shout(monkeypatch):
    serve_toy(monkeypatch, ShoutBenchmark(), ShoutProgram)
