"""CIGPO's information gain from the frozen reference, and a real CIGPO step on HotpotQA (if its data is there)."""

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from nlgrad.errors import ConfigError  # noqa: E402
from nlgrad.runtime.protocols import Task  # noqa: E402
from nlgrad.trainer.credit import InfoGainScorer, question_and_gold  # noqa: E402
from nlgrad.trainer.rollout import EpisodeRollout, Turn  # noqa: E402


def test_question_and_gold_and_the_no_gold_error():
    task = Task(id="q/1", split="train", inputs={"question": "Who?"}, gold={"answer": "Ada"})
    assert question_and_gold(task) == ("Who?", "Ada")
    assert question_and_gold(Task(id="c", split="train", inputs={"claim": "X is Y"}, gold={"label": "SUPPORTED"})) \
        == ("X is Y", "SUPPORTED")
    with pytest.raises(ConfigError, match="gold answer"):
        question_and_gold(Task(id="twx/coin/train/0", split="train", inputs={"game": "coin"}))


def test_information_gain_telescopes_over_turns_that_reveal_evidence(tiny_learner):
    scorer = InfoGainScorer(tiny_learner)
    task = Task(id="q/1", split="train", inputs={"question": "Who wrote the first program?"},
                gold={"answer": "Ada Lovelace"})
    turns = [Turn([1], [2], "q1", evidence="Ada Lovelace: wrote the first program."), Turn([1], [2], "q2"),
             Turn([1], [2], "q3", evidence="Charles Babbage: designed the engine."), Turn([1], [2], "answer")]
    episode = EpisodeRollout(task=task, index=0, turns=turns, score=0.0, success=False)
    gains = scorer.episode_gains(episode)
    assert len(gains) == 4 and gains[1] == 0.0 and gains[3] == 0.0
    none, first, both = scorer.loglik("Who wrote the first program?", "Ada Lovelace",
                                      [[], [turns[0].evidence], [turns[0].evidence, turns[2].evidence]])
    assert math.isclose(gains[0], first - none, abs_tol=1e-5) and math.isclose(gains[2], both - first, abs_tol=1e-5)
    assert math.isclose(sum(gains), both - none, abs_tol=1e-5) and none < 0


def test_cigpo_step_on_hotpotqa(tmp_path):
    from nlgrad.errors import BenchmarkError
    from nlgrad.runtime.registry import load_benchmark
    from nlgrad.trainer.config import TrainConfig
    from nlgrad.trainer.loop import Trainer

    try:
        load_benchmark("hotpotqa").tasks("train", 1)
    except BenchmarkError as exc:
        pytest.skip(f"HotpotQA data not available: {exc}")
    cfg = TrainConfig(method="cigpo", benchmark="hotpotqa", model="tiny", lora=True, lora_rank=4, device="cpu",
                      steps=1, tasks_per_step=1, group_size=2, lr=1e-3, max_new_tokens=6, seed=0)
    trainer = Trainer(cfg, tmp_path / "cigpo")
    outcome = trainer.run()
    record = outcome.curves[0]
    assert record["errors"] == 0 and record["turns"] == 6  # hop1, hop2, answer per episode
    assert record["ig_weight"] == pytest.approx(1.0) and math.isfinite(record["loss"]) and record["updates"] == 1
    assert record["grad_norm"] > 0
