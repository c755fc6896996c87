"""TAPO's next-observation samples and loss on hand-computed numbers (a stand-in model with fixed logits)."""

import math
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from nlgrad.trainer.aux_next_observation import next_observation_loss, next_observation_pairs  # noqa: E402
from nlgrad.trainer.batch import pad_batch  # noqa: E402
from nlgrad.trainer.rollout import Turn  # noqa: E402


class FixedLogits(torch.nn.Module):
    """Logits ``log 3`` on token 3 and 0 elsewhere (V = 4) at every position: p(3) = 1/2, p(other) = 1/6."""

    def forward(self, input_ids, logits_to_keep, **_):
        logits = torch.zeros(input_ids.shape[0], logits_to_keep, 4)
        logits[..., 3] = math.log(3.0)
        return SimpleNamespace(logits=logits)


def test_pairs_come_from_turns_an_environment_step_used():
    turns = [Turn([1, 2], [3], "go north", next_observation="abcdef"), Turn([1], [2], "think"),
             Turn([1], [], "empty", next_observation="x"), Turn([5], [6], "look", next_observation="")]
    encode = lambda text: [ord(c) - ord("a") for c in text]  # noqa: E731
    assert next_observation_pairs(turns, encode, max_tokens=3) == [([1, 2, 3], [0, 1, 2])]


def test_loss_is_the_token_mean_nll_of_the_observation():
    batch = pad_batch([([0, 1], [3, 1]), ([2], [3])], pad_id=0, device=torch.device("cpu"))
    loss = next_observation_loss(FixedLogits(), batch)
    # tokens: 3 (-log 1/2), 1 (-log 1/6), 3 (-log 1/2) -> mean
    assert float(loss) == pytest.approx((2 * math.log(2) + math.log(6)) / 3, abs=1e-5)
