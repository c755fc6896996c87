"""CPU smoke of JERP's weight half on the trainer's tiny model: ``nlgrad optimize --method jerp`` with a trainer
configured runs an iteration end to end on TWX coin (the tiny model plays G rollouts per batch task with the
retrieved rules in its prompts, the reflector (litellm's mock_response) adds a rule, the weights take a step, a
checkpoint is written), and a run killed after its weight step but before the iteration was committed resumes
without playing or training that iteration again. Also: the trainer resumes a run directory written before options
were added, and refuses a different configuration naming it."""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("textworld_express")
pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java")

from fake_lm import install_fake_lm  # noqa: E402

from nlgrad.errors import ConfigError  # noqa: E402
from nlgrad.methods.base import OptimizeConfig  # noqa: E402
from nlgrad.optimize import run_optimize  # noqa: E402
from nlgrad.policy import PolicyMemory, PolicyStore  # noqa: E402
from nlgrad.policy.schema import PolicyEntry  # noqa: E402
from nlgrad.trainer.checkpoint import latest_checkpoint  # noqa: E402
from nlgrad.trainer.config import TrainConfig  # noqa: E402
from nlgrad.trainer.learner_model import load_learner_model  # noqa: E402

SEED_RULE = "When a coin is in the room, take coin before you move."
NEW_RULE = "When no coin is in sight, open a closed door and move through it."
TRAINER = {"model": "tiny", "method": "progpo", "lora": False, "group_size": 2, "lr": 1e-3, "minibatch": 16,
           "max_new_tokens": 8}


def reflector(messages) -> str:
    system = messages[0]["content"]
    if "pool of short rules" in system:  # JERP's reflector (the optimizer role)
        return json.dumps({"ops": [{"op": "ADD", "route": "twx.act", "text": NEW_RULE}]})
    raise AssertionError("only the reflector reaches litellm: the tiny model is the agent")


def config(tmp_path, trainer=None, **kw) -> OptimizeConfig:
    init = tmp_path / "init"
    if not init.exists():
        memory = PolicyMemory(program="twx_react", benchmark="twx/coin",
                              routes={"twx.act": [PolicyEntry(text=SEED_RULE, kind="rule")]})
        PolicyStore(init).commit(memory)
    options = {"trainer": trainer or TRAINER, "embedder": "lexical", "gate": "none", "check_lessons": False, "k": 2,
               "min_utility": None}  # keep the seed rule after its downvotes (no pruning)
    base = dict(method="jerp", benchmark="twx/coin", iterations=1, batch=2, val=1, test_n=0, step_cap=4,
                init_policy=str(init), method_options=options)
    return OptimizeConfig(**{**base, **kw})


def weights(path) -> dict:
    return torch.load(path / "weights.pt", map_location="cpu", weights_only=True)


def test_jerp_iteration_updates_rules_and_weights_from_the_same_rollouts(settings, monkeypatch, tmp_path):
    calls = install_fake_lm(monkeypatch, reflector)
    outcome = run_optimize(config(tmp_path), settings, tmp_path / "p", progress=False)
    run = tmp_path / "p" / "run"
    assert outcome.state.history[0].accepted and outcome.state.completed == 1

    # the rule ops were applied: the reflector's rule added; the seed rule, retrieved in all 4 rollouts (2 tasks x
    # G=2), which all failed (a random model never wins coin within 4 steps), downvoted once per failed rollout
    final = PolicyStore(tmp_path / "p").load()
    rules = {e.text: e for e in final.active_entries("twx.act")}
    assert set(rules) == {SEED_RULE, NEW_RULE} and rules[SEED_RULE].utility == -4
    assert calls and all("pool of short rules" in m[0]["content"] for m in calls)

    # JERP read the tiny model's 2 tasks x G=2 rollouts, whose prompts held the retrieved rule
    it = run / "iter-0001"
    batch = [json.loads(line) for line in (it / "jerp_batch.jsonl").read_text().splitlines()]
    assert len(batch) == 4 and all(r["task_id"].endswith(("#0", "#1")) for r in batch)
    assert {r["rollout_of"] for r in batch} == {r["task_id"][:-2] for r in batch} and len({r["rollout_of"]
                                                                                          for r in batch}) == 2
    assert all(r["retrieved"]["twx.act"] == ["twx.act#1"] for r in batch)
    turns = [json.loads(line) for line in (it / "rollouts" / "turns.jsonl").read_text().splitlines()]
    assert sorted(t["task_id"] for t in turns) == sorted(r["task_id"] for r in batch)
    trace = json.loads(next((it / "rollouts" / "traces").glob("*.json")).read_text())
    assert SEED_RULE in json.dumps(trace)

    # the weights took a step on those rollouts and were checkpointed
    record = json.loads((it / "weights.json").read_text())
    assert record["iteration"] == 1 and record["episodes"] == 4 and record["updates"] >= 1
    assert set(record["tasks"]) == {r["rollout_of"] for r in batch}
    ckpt = latest_checkpoint(run / "weights" / "checkpoints")
    assert ckpt.name == "step-000001"
    initial = load_learner_model("tiny", device="cpu", lora=False, need_reference=False, seed=0)
    start = {n: p.detach() for n, p in initial.model.named_parameters()}
    moved = [n for n, w in weights(ckpt).items() if not torch.equal(w, start[n])]
    assert moved, "no weight changed"
    assert (run / "weights" / "final" / "config.json").exists()  # the merged model after the last iteration
    ledger = json.loads((run / "ledger.json").read_text())
    assert ledger["roles"]["agent"]["calls"] > 0  # the tiny model's calls are in the run's ledger


def test_killed_after_the_weight_step_resumes_without_repeating_it(settings, monkeypatch, tmp_path):
    install_fake_lm(monkeypatch, reflector)
    import nlgrad.methods.jerp as jerp

    real = jerp.apply_pool_update

    class Killed(Exception):
        pass

    def killed(*args, **kwargs):
        raise Killed

    toml = tmp_path / "trainer.toml"  # the trainer's options from a file (the command line's usual form)
    toml.write_text("[trainer]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in TRAINER.items()))
    monkeypatch.setattr(jerp, "apply_pool_update", killed)
    with pytest.raises(Killed):
        run_optimize(config(tmp_path, str(toml), iterations=2), settings, tmp_path / "p", progress=False)
    run = tmp_path / "p" / "run"
    ckpt = latest_checkpoint(run / "weights" / "checkpoints")
    assert ckpt.name == "step-000001" and PolicyStore(tmp_path / "p").versions() == [1]
    after_step = weights(ckpt)
    turns_before = (run / "iter-0001" / "rollouts" / "turns.jsonl").read_text()

    # the same command again: iteration 1 reads its rollouts back and keeps its weight step; iteration 2 is
    # played by the checkpointed weights and takes step 2
    monkeypatch.setattr(jerp, "apply_pool_update", real)
    outcome = run_optimize(config(tmp_path, str(toml), iterations=2), settings, tmp_path / "p", progress=False,
                           stop_after=1)
    assert outcome.state.completed == 1 and PolicyStore(tmp_path / "p").versions() == [1, 2]
    assert (run / "iter-0001" / "rollouts" / "turns.jsonl").read_text() == turns_before  # nothing played again
    assert json.loads((run / "iter-0001" / "weights.json").read_text())["skipped"]
    for name, value in weights(latest_checkpoint(run / "weights" / "checkpoints")).items():
        assert torch.equal(value, after_step[name]), name
    outcome = run_optimize(config(tmp_path, str(toml), iterations=2), settings, tmp_path / "p", progress=False)
    assert outcome.state.completed == 2
    assert latest_checkpoint(run / "weights" / "checkpoints").name == "step-000002"
    curves = [json.loads(line) for line in (run / "weights" / "curves.jsonl").read_text().splitlines()]
    assert [c["iteration"] for c in curves] == [1, 2]

    # the same option (the file's path) with other contents: the trainer refuses, naming what differs
    toml.write_text(toml.read_text().replace("lr = 0.001", "lr = 0.0005"))
    with pytest.raises(ConfigError, match=r"lr: 0\.001 -> 0\.0005"):
        run_optimize(config(tmp_path, str(toml), iterations=2), settings, tmp_path / "p", progress=False)


def test_trainer_resumes_a_run_dir_written_before_options_were_added(tmp_path):
    from nlgrad.trainer.loop import Trainer

    cfg = TrainConfig(benchmark="twx/coin", model="tiny", lora=False, device="cpu", steps=1, tasks_per_step=1,
                      group_size=2, step_cap=1, max_new_tokens=4, method="progpo")
    first = Trainer(cfg, tmp_path / "run")
    assert first._resume() == 0
    first.save_checkpoint(1)
    # rewrite config.json as the version before rules / TIGPO / TAPO / STAPO / IAPO options wrote it
    path = tmp_path / "run" / "config.json"
    saved = json.loads(path.read_text())
    for added in ("rules", "rules_k", "rules_embedder", "revisit_share", "tapo_coef", "stapo_z", "iapo_coef"):
        del saved["config"][added]
    saved["fingerprint"] = "0123456789abcdef"
    path.write_text(json.dumps(saved))
    assert Trainer(cfg, tmp_path / "run")._resume() == 1
    assert json.loads(path.read_text())["fingerprint"] == cfg.fingerprint()  # rewritten for the next resume

    path.write_text(json.dumps(saved))
    pool = tmp_path / "pool"
    PolicyStore(pool).commit(PolicyMemory(program="twx_react", benchmark="twx/coin"))
    with pytest.raises(ConfigError, match=r"different configuration \(rules: None -> '"):
        Trainer(cfg.model_copy(update={"rules": str(pool)}), tmp_path / "run")._resume()
    saved["config"]["gamma"] = 0.5
    path.write_text(json.dumps(saved))
    with pytest.raises(ConfigError, match=r"gamma: 0\.5 -> 0\.95"):
        Trainer(cfg, tmp_path / "run")._resume()
