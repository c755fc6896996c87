"""JERP's weight half (nlgrad/trainer/weight_learner.py): trainer options, rollout groups, the seam's weight step,
the agent override, and the trainer's resume of a run written before options were added. No model is loaded here
(the tiny-model runs are in test_jerp_weights_smoke.py)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from nlgrad.errors import ConfigError, NlgradError
from nlgrad.lm.client import Completion
from nlgrad.lm.ledger import Ledger
from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.jerp import JERP, _distinct_tasks_first
from nlgrad.optimize import inject_weight_learner
from nlgrad.runtime.executor import TaskResult
from nlgrad.runtime.protocols import Task
from nlgrad.trainer.advantages import grpo_advantages
from nlgrad.trainer.config import TrainConfig
from nlgrad.trainer.weight_learner import (AgentOverride, TrainerWeightLearner, episode_groups, episode_seed,
                                         group_copies, read_trainer_options, rollout_id, trainer_config)
from nlgrad.trainer.rollout import EpisodeRollout


# ------------------------------------------------------------------------------------------------ options
def test_trainer_options_from_a_toml_table_or_inline(tmp_path):
    path = tmp_path / "nlgrad.toml"
    path.write_text('retries = 2\n[trainer]\nmodel = "tiny"\nmethod = "gigpo"\ngroup_size = 3\nlr = 0.001\n')
    assert read_trainer_options(str(path)) == {"model": "tiny", "method": "gigpo", "group_size": 3, "lr": 0.001}
    top = tmp_path / "trainer.toml"
    top.write_text('model = "tiny"\nlora = false\n')
    assert read_trainer_options(str(top)) == {"model": "tiny", "lora": False}
    assert read_trainer_options({"model": "tiny"}) == {"model": "tiny"}

    config = OptimizeConfig(method="jerp", benchmark="twx/coin", iterations=3, batch=2, seed=7, step_cap=5)
    cfg = trainer_config({"model": "tiny", "group_size": 3}, config)
    assert (cfg.benchmark, cfg.steps, cfg.tasks_per_step, cfg.seed, cfg.step_cap, cfg.group_size, cfg.save_every) \
        == ("twx/coin", 3, 2, 7, 5, 3, 1)


@pytest.mark.parametrize("values, says", [
    ({"model": "tiny", "tasks_per_step": 4}, "set by the optimize run (--batch)"),
    ({"model": "tiny", "benchmark": "hotpotqa"}, "--benchmark"),
    ({"model": "tiny", "rules": "policies/x"}, "JERP's own rule pool"),
    ({"model": "tiny", "method": "actguide"}, "re-rolls"),
    ({"lr": 0.1}, "needs model"),
    ({"model": "tiny", "lr": -1}, "trainer option lr"),
    ({"model": "tiny", "colour": "red"}, "colour"),
])
def test_trainer_options_refused_with_the_reason(values, says):
    with pytest.raises(ConfigError, match=None) as err:
        read_trainer_options(values)
    assert says in str(err.value)


def test_trainer_option_file_errors_name_the_option(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_trainer_options(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_trainer_options(str(bad))


def test_jerp_trainer_option_checks_early_and_is_a_method_option():
    from nlgrad.methods.options import check_method_options

    assert check_method_options("jerp", {"trainer": {"model": "tiny"}}) == {"trainer": {"model": "tiny"}}
    assert check_method_options("jerp", {"trainer": "t.toml"}) == {"trainer": "t.toml"}
    jerp = JERP(trainer={"model": "tiny"})  # JERP keeps the options; the trainer's learner is injected by the run
    assert jerp.trainer_options == {"model": "tiny"} and jerp.weight_learner is None and not jerp.own_agent
    inject_weight_learner(jerp)
    assert isinstance(jerp.weight_learner, TrainerWeightLearner) and jerp.own_agent
    assert not JERP().own_agent
    with pytest.raises(ConfigError, match="tasks_per_step"):
        inject_weight_learner(JERP(trainer={"model": "tiny", "tasks_per_step": 2}))
    with pytest.raises(ValueError, match="not both"):
        JERP(trainer={"model": "tiny"}, weight_learner=SimpleNamespace(on_batch=None))
    with pytest.raises(ConfigError, match="injects"):  # used on its own, the trainer option says what is missing
        JERP(trainer={"model": "tiny"}).setup(SimpleNamespace())


# ------------------------------------------------------------------------------------------------ rollouts
def test_group_copies_seeds_and_distinct_failures():
    tasks = [Task(id="twx/coin/train/3", split="train", seed=3, meta={"fold": "train"}),
             Task(id="twx/coin/train/8", split="train", seed=8)]
    copies = group_copies(tasks, 2)
    assert [c.id for c in copies] == ["twx/coin/train/3#0", "twx/coin/train/3#1", "twx/coin/train/8#0",
                                      "twx/coin/train/8#1"]
    assert copies[1].seed == 3 and copies[1].meta == {"fold": "train", "rollout_of": "twx/coin/train/3", "rollout": 1}
    assert rollout_id("a", 4) == "a#4"
    assert episode_seed(0, 1, "a#0") == episode_seed(0, 1, "a#0") != episode_seed(0, 2, "a#0")
    assert episode_seed(0, 1, "a#0") != episode_seed(1, 1, "a#0")

    by_id = {c.id: c for c in copies}
    failed = [SimpleNamespace(task_id=i) for i in ["twx/coin/train/3#0", "twx/coin/train/3#1", "twx/coin/train/8#1"]]
    # the second failure of task 3 waits until task 8's first one
    assert [r.task_id for r in _distinct_tasks_first(failed, by_id)] == ["twx/coin/train/3#0", "twx/coin/train/8#1",
                                                                         "twx/coin/train/3#1"]
    plain = {t.id: t for t in tasks}
    single = [SimpleNamespace(task_id=t.id) for t in tasks]
    assert _distinct_tasks_first(single, plain) == single


def episode(task_id: str, index: int, score: float) -> EpisodeRollout:
    return EpisodeRollout(task=Task(id=task_id, split="train"), index=index, turns=[], score=score,
                          success=score == 1.0)


def test_on_batch_groups_the_records_rollouts_by_task_hand_computed(tmp_path):
    """Records of 2 tasks x G=3 rollouts (in JERP's record order) become two groups in rollout order, one weight
    step is taken on them and checkpointed as the iteration. GRPO (std) on the groups, by hand: scores
    (1, 0, 0): mean 1/3, population std sqrt(2)/3, so (2/3)/(sqrt(2)/3) = sqrt(2) and (-1/3)/(sqrt(2)/3) =
    -1/sqrt(2); scores (0, 0, 0): a flat group, zeros."""
    eps = {"a#0": episode("a", 0, 0.0), "a#1": episode("a", 1, 1.0), "a#2": episode("a", 2, 0.0),
           "b#0": episode("b", 0, 0.0), "b#1": episode("b", 1, 0.0), "b#2": episode("b", 2, 0.0)}
    records = [{"task_id": i} for i in ["b#1", "a#1", "a#0", "b#0", "a#2", "b#2"]]
    seen, saved = [], []

    def learn(groups, step, *, tasks, method_stats, t0, t_rollout):
        seen.append((groups, step, [t.id for t in tasks], t_rollout))
        advantages = [grpo_advantages([ep.score for ep in g], "std") for g in groups]
        return {"step": step + 1, "advantages": advantages, "score_mean": 1 / 6, "loss": 0.5, "kl": 0.0,
                "trained_turns": 0, "turns": 0, "updates": 1}

    learner = TrainerWeightLearner({"model": "tiny"}, console=SimpleNamespace(print=lambda *a, **k: None))
    learner.trainer = SimpleNamespace(learn=learn, curves_path=tmp_path / "curves.jsonl",
                                      save_checkpoint=lambda step, **state: saved.append((step, state)))
    learner._pending[2] = (eps, 4.5)
    learner.done = 1
    written = {}
    ws = SimpleNamespace(config=SimpleNamespace(iterations=3),
                         write=lambda iteration, name, data: written.setdefault((iteration, name), data))
    learner.on_batch(records, ws, 2)

    (groups, step, task_ids, rollout_s), = seen
    assert task_ids == ["b", "a"] and step == 1 and rollout_s == 4.5
    assert [[ep.index for ep in g] for g in groups] == [[0, 1, 2], [0, 1, 2]]
    adv_b, adv_a = written[(2, "weights.json")]["advantages"]
    assert adv_b == [0.0, 0.0, 0.0]
    assert adv_a == pytest.approx([-1 / math.sqrt(2), math.sqrt(2), -1 / math.sqrt(2)], abs=1e-5)
    assert saved == [(2, {"iteration": 2})] and learner.done == 2
    assert json.loads((tmp_path / "curves.jsonl").read_text())["iteration"] == 2

    # a step taken before a restart is not taken again; records of rollouts it did not play are refused
    learner.on_batch(records, ws, 2)
    assert len(seen) == 1
    learner._pending[3] = ({"a#0": eps["a#0"]}, 1.0)
    with pytest.raises(NlgradError, match="not played by the trained model"):
        learner.on_batch([{"task_id": "a#0"}, {"task_id": "z#0"}], ws, 3)
    with pytest.raises(NlgradError, match="did not come from"):
        learner.on_batch(records, ws, 4)
    with pytest.raises(ConfigError, match="end at iteration 2"):
        learner._check_iteration(4)
    assert episode_groups([eps["a#2"], eps["b#0"], eps["a#0"]]) == [[eps["a#0"], eps["a#2"]], [eps["b#0"]]]


def test_agent_override_routes_the_agent_role_and_counts_it():
    ledger = Ledger()
    calls = []
    base = SimpleNamespace(ledger=ledger, model_for=lambda role: f"openai/{role}", parallelism=lambda role: 4,
                           constrains_json=lambda role: True, settings="base settings",
                           complete=lambda role, messages, **kw: calls.append(role) or Completion("base", "m"))
    agent = SimpleNamespace(name="hf/tiny", complete=lambda role, messages, **kw: Completion(
        "act", "hf/tiny", prompt_tokens=7, completion_tokens=2, latency_s=0.5))
    lm = AgentOverride(base, agent)
    assert lm.complete("agent", [{"role": "user", "content": "x"}]).text == "act"
    assert lm.complete("optimizer", []).text == "base" and calls == ["optimizer"]
    assert (lm.model_for("agent"), lm.model_for("critic")) == ("hf/tiny", "openai/critic")
    assert (lm.parallelism("agent"), lm.parallelism("critic")) == (1, 4)
    assert lm.constrains_json("agent") is False and lm.settings == "base settings"
    usage = ledger.total()
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 7, 2)


# ------------------------------------------------------------------------------------------------ trainer resume
def test_resume_differences_of_a_run_written_before_options_were_added():
    now = TrainConfig(benchmark="twx/coin", model="tiny", method="progpo", lr=1e-3)
    old = now.model_dump(mode="json")
    for added in ("rules", "rules_k", "rules_embedder", "revisit_share", "guide_hint", "tapo_coef", "tapo_max_tokens",
                  "stapo_z", "stapo_scale", "stapo_penalty", "iapo_coef", "difficulty_weight", "milestone_coef",
                  "milestone_prior"):
        del old[added]
    assert now.resume_differences(old) == []  # the added options at their defaults: the same run
    assert now.resume_differences({**old, "steps": 99, "eval_n": 5}) == []  # resumable fields may change
    assert now.resume_differences({**old, "lr": 5e-4}) == ["lr: 0.0005 -> 0.001"]
    with_rules = TrainConfig(benchmark="twx/coin", model="tiny", method="progpo", lr=1e-3, rules="policies/p")
    assert with_rules.resume_differences(old) == ["rules: None -> 'policies/p'"]
    assert now.resume_differences({**old, "beta": 1}) == ["beta: 1 (an option this version does not have)"]
    assert "method" in now.resume_differences({**old, "method": "ppo"})[0]
