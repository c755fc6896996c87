"""JERP's weight half: `nlgrad train --rules DIR` retrieves the pool's rules into the prompts it trains on."""

import shutil

import pytest

from nlgrad.errors import ConfigError
from nlgrad.policy.memory import PolicyMemory
from nlgrad.policy.schema import PolicyEntry
from nlgrad.policy.store import PolicyStore
from nlgrad.runtime.rule_retrieval import rule_pool_hooks

RULE = "Always take the coin as soon as you see it."


def pool(tmp_path):
    memory = PolicyMemory(program="twx_react", benchmark="twx/coin",
                          routes={"twx.act": [PolicyEntry(text=RULE, kind="rule")]})
    PolicyStore(tmp_path / "rules").commit(memory)
    return str(tmp_path / "rules")


def test_hooks_load_the_pool_and_jerps_retriever(tmp_path):
    from nlgrad.methods.jerp import Retriever

    hooks = rule_pool_hooks(pool(tmp_path), k=2)
    assert isinstance(hooks["policy"], PolicyMemory) and isinstance(hooks["policy_for_task"], Retriever)
    assert [e.text for e in hooks["policy"].active_entries("twx.act")] == [RULE]
    assert hooks["policy_for_task"].k == 2
    assert rule_pool_hooks(None) == {}
    with pytest.raises(ConfigError):
        rule_pool_hooks(str(tmp_path / "missing"))


@pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java")
def test_trained_prompts_contain_the_retrieved_rule(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("textworld_express")
    from nlgrad.trainer.config import TrainConfig
    from nlgrad.trainer.loop import Trainer
    from nlgrad.trainer.rollout import run_episode

    cfg = TrainConfig(benchmark="twx/coin", model="tiny", lora=False, device="cpu", steps=1, tasks_per_step=1,
                      group_size=2, step_cap=1, max_new_tokens=4, rules=pool(tmp_path))
    trainer = Trainer(cfg, tmp_path / "run")
    try:
        episode = run_episode(trainer.executor, trainer.lm, trainer.train_tasks[0], 0, trainer.state_log)
    finally:
        trainer.executor._close_envs()
    acts = [t for t in episode.turns if t.route == "twx.act"]
    assert acts and all(RULE in trainer.learner_model.tokenizer.decode(t.prompt_ids) for t in acts)
