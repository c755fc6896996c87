"""PPO-clip surrogate with KL to the reference, on hand-computed values."""

import math

import pytest

torch = pytest.importorskip("torch")

from nlgrad.trainer.loss import ppo_clip_loss  # noqa: E402


def t(rows):
    return torch.tensor(rows, dtype=torch.float32)


def test_at_ratio_one_the_loss_is_minus_the_mean_advantage():
    logp = t([[-1.0, -2.0], [-0.5, -0.7]])
    mask = t([[1, 1], [0, 1]])
    loss, stats = ppo_clip_loss(logp, logp.clone(), t([1.0, -2.0]), mask)
    # token-mean over 3 tokens: -(1 + 1 - 2) / 3
    assert math.isclose(float(loss), 0.0, abs_tol=1e-6) and stats.tokens == 3 and stats.clip_fraction == 0.0
    loss, _ = ppo_clip_loss(logp, logp.clone(), t([1.0, -2.0]), mask, agg="seq-mean")
    # per turn: -1 and +2 -> mean 0.5
    assert math.isclose(float(loss), 0.5, abs_tol=1e-6)


def test_ratio_is_clipped_pessimistically():
    old = t([[0.0], [0.0]])
    new = t([[math.log(1.5)], [math.log(1.5)]])
    mask = t([[1], [1]])
    loss, stats = ppo_clip_loss(new, old, t([1.0, -1.0]), mask, clip_eps=0.2)
    # A=+1: min(1.5, 1.2) = 1.2; A=-1: min(-1.5, -1.2) = -1.5 -> loss = -(1.2 - 1.5) / 2 = 0.15
    assert math.isclose(float(loss), 0.15, abs_tol=1e-5)
    assert stats.clip_fraction == 1.0 and math.isclose(stats.ratio_mean, 1.5, rel_tol=1e-5)
    loss, _ = ppo_clip_loss(new, old, t([1.0, -1.0]), mask, clip_eps=0.2, clip_eps_high=0.6)
    # the upper bound 1.6 no longer clips 1.5: -(1.5 - 1.5) / 2 = 0
    assert math.isclose(float(loss), 0.0, abs_tol=1e-5)


def test_kl_penalty_is_the_k3_estimator():
    logp = t([[-1.0]])
    loss, stats = ppo_clip_loss(logp, logp.clone(), t([0.0]), t([[1]]), ref_logp=logp.clone(), kl_coef=0.5)
    assert float(loss) == 0.0 and stats.kl == 0.0
    d = 0.3  # ref - logp
    loss, stats = ppo_clip_loss(logp, logp.clone(), t([0.0]), t([[1]]), ref_logp=logp + d, kl_coef=0.5)
    kl = math.exp(d) - d - 1
    assert math.isclose(stats.kl, kl, rel_tol=1e-5) and math.isclose(float(loss), 0.5 * kl, rel_tol=1e-5)


def test_a_gradient_step_raises_the_probability_of_positive_advantage_tokens():
    logits = torch.zeros(2, 4, requires_grad=True)
    target = torch.tensor([[1], [2]])
    opt = torch.optim.SGD([logits], lr=1.0)
    old = torch.log_softmax(logits, -1).gather(-1, target).detach()
    for _ in range(3):
        logp = torch.log_softmax(logits, -1).gather(-1, target)
        loss, _ = ppo_clip_loss(logp, old, t([1.0, -1.0]), t([[1], [1]]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    probs = torch.softmax(logits, -1)
    assert probs[0, 1] > 0.25 > probs[1, 2]
