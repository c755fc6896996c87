"""Trainer tests need the optional extra ``train`` (torch, transformers, peft); they skip cleanly without it."""

import pytest


@pytest.fixture(scope="module")
def tiny_policy():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from nlgrad.trainer.policy_model import load_policy

    return load_policy("tiny", device="cpu", lora=False, need_reference=True, seed=0)
