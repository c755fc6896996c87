"""ActGuide-RL: an all-zero group is re-rolled under a plan hint, joins its group, and the guided turns carry the
unguided prompt; GRPO over the 2G episodes on hand-computed numbers."""

from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from nlgrad.runtime.protocols import Task
from nlgrad.runtime.trace import Trace
from nlgrad.trainer.actguide import DEFAULT_HINT, guide_zero_groups, needs_guidance, plan_hint
from nlgrad.trainer.hf_lm import with_hint
from nlgrad.trainer.rollout import EpisodeRollout

TASK = Task(id="twx/coin/train/0", split="train", inputs={"game": "coin"}, seed=0)


class HintAwareLM:
    """Stands in for LearnerLM: remembers the hint active in ``guided``."""

    def __init__(self):
        self.hint = None

    @contextmanager
    def guided(self, hint):
        self.hint = hint
        yield self
        self.hint = None

    def take_turns(self):
        return []


class ScoresWithHint:
    """An executor whose episodes score 1 when run under a hint, else 0."""

    def __init__(self, lm):
        self.lm, self.hints = lm, []

    def run_task(self, task):
        self.hints.append(self.lm.hint)
        score = 1.0 if self.lm.hint else 0.0
        return SimpleNamespace(score=score, success=score > 0, steps=1, error=None), Trace(task_id=task.id)


def episode(score, index):
    return EpisodeRollout(task=TASK, index=index, turns=[], score=score, success=score > 0)


def test_plan_hint_and_trigger():
    assert plan_hint(TASK) == DEFAULT_HINT
    assert plan_hint(TASK, "Plan: go north") == "Plan: go north"
    planned = Task(id="x", split="train", inputs={}, gold={"walkthrough": ["open door", "take coin"]})
    assert plan_hint(planned) == "Plan: open door; take coin"
    assert needs_guidance([episode(0.0, 0), episode(0.0, 1)])
    assert not needs_guidance([episode(0.0, 0), episode(0.5, 1)])
    assert with_hint([{"role": "user", "content": "Q"}], "H") == [{"role": "user", "content": "Q\n\nH"}]


def test_zero_groups_are_rerolled_with_the_hint_and_trained_by_grpo_over_2g():
    from nlgrad.trainer.config import TrainConfig
    from nlgrad.trainer.credit import assign_advantages

    lm = HintAwareLM()
    executor = ScoresWithHint(lm)
    zero = [episode(0.0, 0), episode(0.0, 1)]
    mixed = [episode(1.0, 0), episode(0.0, 1)]
    stats = guide_zero_groups(executor, lm, [zero, mixed], hint="Plan: take coin")
    assert stats == {"guided_groups": 1, "guided_nonzero": 2}
    assert executor.hints == ["Plan: take coin"] * 2  # only the all-zero group was re-rolled
    assert [ep.guided for ep in zero] == [False, False, True, True] and [ep.index for ep in zero] == [0, 1, 2, 3]
    assert len(mixed) == 2
    # GRPO over the 2G episodes of [0, 0, 1, 1]: mean .5, std .5 -> -1, -1, 1, 1 (eps aside)
    from nlgrad.trainer.advantages import grpo_advantages
    assert grpo_advantages([0.0, 0.0, 1.0, 1.0]) == pytest.approx([-1.0, -1.0, 1.0, 1.0], abs=1e-5)
    cfg = TrainConfig(benchmark="twx/coin", model="tiny", method="actguide")
    for ep in zero:
        ep.turns = [SimpleNamespace(anchor="a", route="r", advantage=0.0, completion_ids=[1])]
    assign_advantages([zero], cfg, 0)
    assert [ep.turns[0].advantage for ep in zero] == pytest.approx([-1.0, -1.0, 1.0, 1.0], abs=1e-5)


def test_guided_turns_record_the_unguided_prompt_and_their_entropy(tiny_learner):
    from nlgrad.trainer.hf_lm import LearnerLM

    lm = LearnerLM(tiny_learner, mode="sample", temperature=1.0)
    messages = [{"role": "user", "content": "You are in the kitchen. Take the coin."}]
    with lm.guided("Plan: take coin"):
        lm.complete("agent", messages, max_tokens=3)
    lm.complete("agent", messages, max_tokens=3)
    guided, plain = lm.take_turns()
    assert guided.guided and not plain.guided
    assert guided.prompt_ids == plain.prompt_ids == tiny_learner.encode_chat(messages)
    assert tiny_learner.encode_chat(with_hint(messages, "Plan: take coin")) != guided.prompt_ids
    vocab = tiny_learner.model.config.vocab_size
    import math
    assert 0.0 < guided.entropy <= math.log(vocab) + 1e-6  # mean token entropy of the sampling distribution
