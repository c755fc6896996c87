"""Checkpoints: weights, optimizer, RNG and step round-trip; `latest` points at the last complete one; pruning."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from nlgrad.trainer import checkpoint as ckpt  # noqa: E402
from nlgrad.trainer.learner_model import load_learner_model  # noqa: E402


def _step(model, opt):
    loss = sum((p.float() ** 2).sum() for p in model.parameters() if p.requires_grad)
    opt.zero_grad()
    loss.backward()
    opt.step()


def test_round_trip_restores_weights_optimizer_and_rng(tmp_path):
    learner = load_learner_model("tiny", device="cpu", lora=True, lora_rank=2, seed=0)
    model = learner.model
    opt = torch.optim.AdamW(learner.trainable_parameters(), lr=0.1)
    _step(model, opt)
    torch.manual_seed(123)
    saved = ckpt.save_checkpoint(tmp_path, 1, model, opt, {"method": "grpo"})
    expected_weights = ckpt.trainable_state(model)
    expected_draw = torch.rand(3)
    # only the adapters are stored for a LoRA model
    assert all("lora_" in name for name in torch.load(saved / "weights.pt"))
    _step(model, opt)  # move on, then restore
    torch.rand(5)
    state = ckpt.load_checkpoint(ckpt.latest_checkpoint(tmp_path), model, opt)
    assert state == {"method": "grpo", "step": 1}
    for name, value in ckpt.trainable_state(model).items():
        assert torch.equal(value, expected_weights[name])
    assert torch.equal(torch.rand(3), expected_draw)
    assert opt.state_dict()["state"][0]["step"] == 1


def test_latest_pointer_and_pruning(tmp_path):
    learner = load_learner_model("tiny", device="cpu", lora=True, lora_rank=2, seed=0)
    opt = torch.optim.AdamW(learner.trainable_parameters(), lr=0.1)
    assert ckpt.latest_checkpoint(tmp_path) is None
    for step in (1, 2, 3):
        ckpt.save_checkpoint(tmp_path, step, learner.model, opt, {}, keep=2)
    assert sorted(p.name for p in tmp_path.glob("step-*")) == ["step-000002", "step-000003"]
    assert ckpt.latest_checkpoint(tmp_path).name == "step-000003"
    (tmp_path / ".step-000004.tmp").mkdir()  # a crash while writing leaves only a temp dir behind
    assert ckpt.latest_checkpoint(tmp_path).name == "step-000003"


def test_a_checkpoint_of_another_model_is_refused(tmp_path):
    lora = load_learner_model("tiny", device="cpu", lora=True, lora_rank=2, seed=0)
    full = load_learner_model("tiny", device="cpu", lora=False, need_reference=False, seed=0)
    opt = torch.optim.AdamW(lora.trainable_parameters(), lr=0.1)
    path = ckpt.save_checkpoint(tmp_path, 1, lora.model, opt, {})
    with pytest.raises(ValueError, match="does not match"):
        ckpt.load_checkpoint(path, full.model, torch.optim.AdamW(full.trainable_parameters()))
