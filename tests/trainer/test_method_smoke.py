"""One real optimization step on TWX coin with the tiny model for each credit option added for issue 28: rollouts
through nlgrad's program, environment state keys recorded for every environment node, finite loss."""

import json
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
                                     {"method": "milegpo"}, {"method": "actguide"}, {"method": "tapo"},
                                     {"method": "stapo"}, {"method": "iapo"}],
                         ids=["gigpo+progpo-step", "hidifftir", "milegpo", "actguide", "tapo", "stapo", "iapo"])
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
    turns = [t for ep in groups[0] for t in ep.turns if t.completion_ids]
    if cfg.method == "hidifftir":
        assert set(stats["route_failure_rates"]) == {t.route for ep in groups[0] for t in ep.turns}
    if cfg.method == "stapo":  # entropy recorded at rollout time for every sampled turn
        assert turns and all(t.entropy is not None and t.entropy > 0 for t in turns)
        assert "entropy_outliers" in stats
    if cfg.method in ("iapo", "tapo"):  # every played step is a use of the calls that decided it
        for ep in groups[0]:
            assert sum(t.uses_supported + t.uses_failed for t in ep.turns) >= ep.steps
            assert (ep.steps == 0) or any(t.next_observation for t in ep.turns)
    record = trainer.run().curves[0]
    assert record["errors"] == 0 and record["updates"] >= 1 and math.isfinite(record["loss"])
    if cfg.method == "actguide":  # all-zero groups were re-rolled under their gold plan and joined their group
        assert record["episodes"] == cfg.group_size * (1 + record["guided_groups"])
        assert record["unplanned_groups"] == 0  # every TWX train task has a gold action sequence
    if cfg.method == "tapo":
        assert record["next_obs_pairs"] >= 1 and math.isfinite(record["next_obs_loss"]) and record["next_obs_loss"] > 0


def test_tigpo_revisits_and_checkpoints_its_task_statistics(tmp_path):
    cfg = TrainConfig(benchmark="twx/coin", model="tiny", lora=False, device="cpu", steps=2, tasks_per_step=2,
                      group_size=2, step_cap=2, lr=1e-3, minibatch=16, seed=0, skip_zero_advantage=False,
                      method="tigpo", revisit_share=0.5)
    trainer = Trainer(cfg, tmp_path / "run")
    first, second = trainer.run().curves
    assert first["revisited_tasks"] == 0 and second["revisited_tasks"] == 1
    assert second["tasks"][1] in first["tasks"]  # the last slot revisits a task of step 1
    state = json.loads((tmp_path / "run" / "checkpoints" / "step-000002" / "state.json").read_text())
    history = state["task_stats"]  # every task's transition graph; exploration groups, not the revisit's
    assert set(history["graphs"]) == set(first["tasks"]) | set(second["tasks"])
    assert any(history["graphs"][task] for task in history["graphs"])  # transitions of played steps
    assert set(history["explorations"]) == set(first["tasks"]) | {second["tasks"][0]}
    assert history["explorations"][second["tasks"][1]]["step"] == 0  # the revisit kept its exploration group
    assert history == trainer.task_history.to_dict()
    resumed = Trainer(cfg.model_copy(update={"steps": 3}), tmp_path / "run")
    assert resumed._resume() == 2 and resumed.task_history.to_dict() == history


def test_actguide_guides_all_zero_groups_with_gold_plans_and_checkpoints_them(tmp_path):
    cfg = TrainConfig(benchmark="twx/coin", model="tiny", lora=False, device="cpu", steps=1, tasks_per_step=3,
                      group_size=2, step_cap=2, lr=1e-3, minibatch=16, seed=1, skip_zero_advantage=False,
                      method="actguide")
    trainer = Trainer(cfg, tmp_path / "run")
    record = trainer.run().curves[0]
    # two of the three groups scored 0 everywhere: re-rolled under their tasks' gold action sequences
    assert (record["guided_groups"], record["unplanned_groups"], record["episodes"]) == (2, 0, 10)
    plans = trainer.plan_source.cache
    assert len(plans) == 2 and set(plans) < set(record["tasks"])
    assert all(plan[0] == "look around" and plan[-1] == "take coin" for plan in plans.values())
    state = json.loads((tmp_path / "run" / "checkpoints" / "step-000001" / "state.json").read_text())
    assert state["gold_plans"] == plans
    resumed = Trainer(cfg.model_copy(update={"steps": 2}), tmp_path / "run")
    assert resumed._resume() == 1 and resumed.plan_source.cache == plans  # a resume guides with the same plans
