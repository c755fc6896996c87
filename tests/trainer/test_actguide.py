"""ActGuide-RL: an all-zero group is re-rolled under a plan from the task's gold action sequence (only as that
fallback, train tasks only), joins its group, and the guided turns carry the unguided prompt; GRPO over the 2G
episodes on hand-computed numbers. Plans of real TWX and ScienceWorld tasks come from the games' own solvers."""

from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from nlgrad.runtime.protocols import Task
from nlgrad.runtime.trace import Trace
from nlgrad.trainer.actguide import guide_zero_groups, needs_guidance, plan_hint
from nlgrad.trainer.gold_plans import TaskGoldPlans, TrainOnly, clean_plan
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


class FakePlans:
    """A plan source: the plan of the tasks it knows, recording what it was asked."""

    def __init__(self, plans):
        self.plans, self.asked = plans, []

    def plan(self, task):
        self.asked.append(task.id)
        return self.plans.get(task.id)

    def close(self):
        pass


def test_plan_hint_and_trigger():
    assert plan_hint(["look around", "open door to west", "take coin"]) == (
        "Reference plan (the actions of a run that solved this task): 1. look around; 2. open door to west; "
        "3. take coin")
    assert plan_hint(None) is None and plan_hint([]) is None  # no action data, no generic hint
    assert plan_hint(["take coin"], "Plan: go north") == "Plan: go north"
    planned = Task(id="x", split="train", inputs={}, gold={"walkthrough": ["open door", "take coin"]})
    assert TaskGoldPlans().plan(planned) == ["open door", "take coin"] and TaskGoldPlans().plan(TASK) is None
    assert clean_plan(["ERROR: Gold path was not generated."]) is None and clean_plan([" a ", ""]) == ["a"]
    assert needs_guidance([episode(0.0, 0), episode(0.0, 1)])
    assert not needs_guidance([episode(0.0, 0), episode(0.5, 1)])
    assert with_hint([{"role": "user", "content": "Q"}], "H") == [{"role": "user", "content": "Q\n\nH"}]


def test_plans_are_read_for_train_tasks_only_and_cached():
    source = FakePlans({TASK.id: ["take coin"]})
    plans = TrainOnly(source)
    assert plans.plan(TASK) == ["take coin"] and plans.plan(TASK) == ["take coin"] and source.asked == [TASK.id]
    for split in ("dev", "test"):
        with pytest.raises(ValueError, match="train tasks only"):
            plans.plan(Task(id=f"twx/coin/{split}/1", split=split, inputs={}, seed=1))
    assert source.asked == [TASK.id]


def test_zero_groups_are_rerolled_with_their_gold_plan_and_trained_by_grpo_over_2g():
    from nlgrad.trainer.config import TrainConfig
    from nlgrad.trainer.credit import assign_advantages

    lm = HintAwareLM()
    executor = ScoresWithHint(lm)
    other = Task(id="twx/coin/train/1", split="train", inputs={"game": "coin"}, seed=1)
    unplanned = Task(id="twx/coin/train/2", split="train", inputs={"game": "coin"}, seed=2)
    zero = [episode(0.0, 0), episode(0.0, 1)]
    mixed = [EpisodeRollout(task=other, index=i, turns=[], score=s, success=s > 0) for i, s in enumerate((1.0, 0.0))]
    no_plan = [EpisodeRollout(task=unplanned, index=i, turns=[], score=0.0, success=False) for i in range(2)]
    plans = FakePlans({TASK.id: ["look around", "take coin"], other.id: ["take coin"]})
    stats = guide_zero_groups(executor, lm, [zero, mixed, no_plan], plans=plans)
    assert stats == {"guided_groups": 1, "guided_nonzero": 2, "unplanned_groups": 1}
    # guidance is only the fallback: the mixed group's plan is never read; the plan-less all-zero group stays as is
    assert plans.asked == [TASK.id, unplanned.id]
    hint = "Reference plan (the actions of a run that solved this task): 1. look around; 2. take coin"
    assert executor.hints == [hint] * 2
    assert [ep.guided for ep in zero] == [False, False, True, True] and [ep.index for ep in zero] == [0, 1, 2, 3]
    assert len(mixed) == 2 and len(no_plan) == 2
    # --guide-hint replaces the plan (and no plan is read)
    executor.hints.clear()
    again = [episode(0.0, 0), episode(0.0, 1)]
    assert guide_zero_groups(executor, lm, [again], plans=plans, hint="Plan: take coin")["guided_groups"] == 1
    assert executor.hints == ["Plan: take coin"] * 2 and plans.asked == [TASK.id, unplanned.id]
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
