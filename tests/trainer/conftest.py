"""Trainer tests need the optional extra ``train`` (torch, transformers, peft); they skip cleanly without it."""

import pytest


@pytest.fixture(scope="module")
def tiny_learner():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from nlgrad.trainer.learner_model import load_learner_model

    return load_learner_model("tiny", device="cpu", lora=False, need_reference=True, seed=0)
