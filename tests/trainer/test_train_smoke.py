"""CPU smoke run: real multi-turn TWX coin rollouts through nlgrad's program, real optimization steps on the tiny
model, loss finite, weights changed, curves logged, a killed run resumed bit-for-bit, in-process evaluation."""

import json
import math
import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("textworld_express")
pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java")

from nlgrad.trainer.checkpoint import latest_checkpoint, trainable_state  # noqa: E402
from nlgrad.trainer.config import TrainConfig  # noqa: E402
from nlgrad.trainer.loop import Trainer  # noqa: E402


class Killed(Exception):
    pass


def config(**kw) -> TrainConfig:
    # ProGPO: with a random-init model most coin episodes fail; coverage still ranks the rollouts of a group.
    base = dict(method="progpo", benchmark="twx/coin", model="tiny", lora=False, device="cpu", steps=2,
                tasks_per_step=2, group_size=2, step_cap=4, lr=1e-3, minibatch=16, seed=0, eval_n=1,
                eval_step_cap=3)
    return TrainConfig(**{**base, **kw})


def test_smoke_train_resume_and_evaluate(tmp_path):
    straight = Trainer(config(), tmp_path / "a")
    before = trainable_state(straight.learner_model.model)
    outcome = straight.run()
    after = trainable_state(straight.learner_model.model)

    curves = [json.loads(line) for line in (tmp_path / "a" / "curves.jsonl").read_text().splitlines()]
    assert [c["step"] for c in curves] == [1, 2] and outcome.steps_done == 2
    assert all(math.isfinite(c["loss"]) and math.isfinite(c["kl"]) for c in curves)
    assert sum(c["updates"] for c in curves) >= 1 and sum(c["turns"] for c in curves) >= 4
    assert all(c["errors"] == 0 for c in curves)
    changed = [n for n in before if not torch.equal(before[n], after[n])]
    assert changed, "no parameter moved after the optimization steps"
    assert latest_checkpoint(tmp_path / "a" / "checkpoints").name == "step-000002"

    # a run killed after logging step 2 but before its checkpoint resumes from step 1 and replays step 2 exactly
    def kill_at_step_2(record):
        if record["step"] == 2:
            raise Killed

    with pytest.raises(Killed):
        Trainer(config(), tmp_path / "b", on_step=kill_at_step_2).run()
    assert latest_checkpoint(tmp_path / "b" / "checkpoints").name == "step-000001"
    resumed = Trainer(config(), tmp_path / "b")
    outcome_b = resumed.run()
    assert outcome_b.resumed_from == 1
    lines = [json.loads(line) for line in (tmp_path / "b" / "curves.jsonl").read_text().splitlines()]
    assert [c["step"] for c in lines] == [1, 2]
    assert lines[1]["tasks"] == curves[1]["tasks"] and lines[1]["loss"] == pytest.approx(curves[1]["loss"])
    for name, value in trainable_state(resumed.learner_model.model).items():
        assert torch.allclose(value, after[name], atol=1e-6), name

    # a different configuration in the same directory is refused
    from nlgrad.errors import ConfigError

    with pytest.raises(ConfigError, match="different configuration"):
        Trainer(config(lr=5e-4), tmp_path / "b").run()

    # the merged model and an in-process evaluation through nlgrad's executor (nlgrad eval's run-dir format)
    straight.finish(outcome)
    assert (tmp_path / "a" / "final" / "config.json").exists()
    run = tmp_path / "a" / "eval-dev"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["n"] == 1 and summary["errors"] == 0 and 0.0 <= summary["score"]["mean"] <= 1.0
    saved = json.loads((run / "config.json").read_text())
    assert saved["command"] == "eval" and saved["trainer"]["method"] == "progpo"
    assert len((run / "results.jsonl").read_text().splitlines()) == 1
