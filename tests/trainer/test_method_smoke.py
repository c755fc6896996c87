"""One real optimization step on TWX coin with the tiny model for each credit option added for issue 28: rollouts
through nlgrad's program, environment state keys recorded for every environment node, finite loss."""

import math
import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("textworld_express")
pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java")

from nlgrad.trainer.config import TrainConfig  # noqa: E402
from nlgrad.trainer.credit import assign_advantages  # noqa: E402
from nlgrad.trainer.loop import Trainer  # noqa: E402
from nlgrad.trainer.rollout import collect_groups  # noqa: E402


@pytest.mark.parametrize("options", [{"method": "gigpo", "progpo_step": True}, {"method": "hidifftir"},
                                     {"method": "milegpo"}], ids=["gigpo+progpo-step", "hidifftir", "milegpo"])
def test_one_step_on_twx_coin(tmp_path, options):
    cfg = TrainConfig(benchmark="twx/coin", model="tiny", lora=False, device="cpu", steps=1, tasks_per_step=1,
                      group_size=2, step_cap=3, lr=1e-3, minibatch=16, seed=0, skip_zero_advantage=False, **options)
    trainer = Trainer(cfg, tmp_path / "run")
    tasks = trainer.train_tasks[:1]
    groups = collect_groups(trainer.executor, trainer.lm, tasks, cfg.group_size, state_log=trainer.state_log)
    for episode in groups[0]:
        # one environment state (TWX's own state_key) per reset and step; every turn acted at a played-or-current step
        assert len(episode.observations) == episode.steps + 1
        assert all(key.startswith("state:") for key in episode.observations)
        assert all(0 <= t.env_step <= episode.steps for t in episode.turns)
    stats = assign_advantages(groups, cfg, 0)
    assert all(math.isfinite(t.advantage) for ep in groups[0] for t in ep.turns)
    if cfg.method == "hidifftir":
        assert set(stats["route_failure_rates"]) == {t.route for ep in groups[0] for t in ep.turns}
    record = trainer.run().curves[0]
    assert record["errors"] == 0 and record["updates"] >= 1 and math.isfinite(record["loss"])
