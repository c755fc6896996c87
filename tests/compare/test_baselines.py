"""Baselines on the toy benchmark with a fake LM world: the policy mapping, GEPA's adapter, MIPROv2, TextGrad."""

import json

import pytest
from compare_helpers import RULE, ShoutBenchmark, ShoutProgram
from fake_lm import serve_toy

from nlgrad.errors import ConfigError
from nlgrad.lm.client import LM
from nlgrad.methods.base import OptimizeConfig, Workspace
from nlgrad.methods.baselines.common import memory_from_candidate, route_text, seed_candidate
from nlgrad.optimize import run_optimize
from nlgrad.policy import AddOp, EntryKind, PolicyMemory, PolicyStore, apply_update
from nlgrad.runtime.module import route_instructions


@pytest.fixture(autouse=True)
def baselines(monkeypatch):
    from nlgrad.methods import CATALOG
    from nlgrad.methods.baselines import BASELINES

    for name, target in BASELINES.items():
        monkeypatch.setitem(CATALOG, name, target)


def empty():
    return PolicyMemory(program="shout", benchmark="shout", method="init")


def workspace(settings, tmp_path, **kw):
    store = PolicyStore(tmp_path / "pol")
    store.commit(empty(), method="init")
    config = OptimizeConfig(benchmark="shout", batch=3, val=4, test_n=0, **kw)
    ws = Workspace(config=config, benchmark=ShoutBenchmark(), program=ShoutProgram(),
                   lm=LM(settings, sleep=lambda s: None), store=store, work_dir=tmp_path / "pol" / "run")
    return ws


# ---- the mapping between route texts and policy memory -----------------------------------------------------------
def test_seed_text_is_the_static_instruction_then_a_single_rule_entry():
    program = ShoutProgram()
    assert route_instructions(program, "shout.say") == "Repeat the text."
    assert seed_candidate(program, empty()) == {"shout.say": "Repeat the text."}
    with_rule, _, _ = memory_from_candidate(empty(), {"shout.say": "Be loud."}, {"shout.say": "Repeat the text."},
                                            source="gepa")
    assert seed_candidate(program, with_rule) == {"shout.say": "Be loud."}
    two, _ = apply_update(empty(), [AddOp(route="shout.say", text="One."), AddOp(route="shout.say", text="Two.")])
    assert seed_candidate(program, two)["shout.say"] == two.render("shout.say")


def test_seed_text_of_a_module_with_constants_holds_them():
    """A label list given as a module constant is part of the fixed system text a prompt optimizer starts from;
    nlgrad's own methods read the instructions without it (a block that needs it renders as "")."""
    from nlgrad.runtime.module import Module

    class Labels:
        routes = ["intent.classify"]

        def __init__(self):
            self.classify = Module(
                route="intent.classify", constants={"labels": ["card_arrival", "exchange_rate"]},
                template="{% block system %}Reply with one label.\n{% for l in labels %}{{ l }}\n"
                         "{% endfor %}{{ policy }}{% endblock %}{% block user %}{{ message }}{% endblock %}")

    program = Labels()
    assert route_instructions(program, "intent.classify") == ""
    assert route_instructions(program, "intent.classify", with_constants=True) == \
        "Reply with one label.\ncard_arrival\nexchange_rate"
    assert seed_candidate(program, empty())["intent.classify"].splitlines()[1:] == ["card_arrival", "exchange_rate"]


def test_candidate_becomes_one_rule_entry_and_the_seed_maps_back_to_the_start():
    seed = {"shout.say": "Repeat the text."}
    unchanged, ops, _ = memory_from_candidate(empty(), dict(seed), seed, source="gepa")
    assert ops == [] and unchanged.render("shout.say") == ""
    new, ops, report = memory_from_candidate(empty(), {"shout.say": "Line one.\nLine two."}, seed, source="gepa",
                                             iteration=3)
    (entry,) = new.active_entries("shout.say")
    assert entry.kind == EntryKind.rule and entry.text == "Line one.\nLine two." and entry.provenance.iteration == 3
    assert route_text(new, "shout.say") == "Line one.\nLine two."
    replaced, ops, _ = memory_from_candidate(new, {"shout.say": "Other."}, seed, source="gepa")
    assert [e.text for e in replaced.active_entries("shout.say")] == ["Other."]
    assert {o.op for o in ops} == {"delete", "add"}
    back, _, _ = memory_from_candidate(replaced, dict(seed), seed, source="gepa", initial=empty())
    assert back.render("shout.say") == ""


# ---- GEPA ----------------------------------------------------------------------------------------------------------
def test_gepa_adapter_evaluates_through_the_executor_and_builds_a_reflective_dataset(settings, fake_world, tmp_path):
    from nlgrad.methods.baselines.gepa_adapter import NlgradGEPAAdapter, ReflectionLM

    ws = workspace(settings, tmp_path)
    seed = seed_candidate(ws.program, empty())
    adapter = NlgradGEPAAdapter(ws, base=empty(), seed=seed, iteration=1)
    batch = ws.train_tasks[:3]
    result = adapter.evaluate(batch, seed, capture_traces=True)
    assert result.scores == [0.0, 0.0, 0.0] and len(result.trajectories) == 3
    assert result.outputs[0]["feedback"].startswith("expected 'WORD NUMBER 0'")
    dataset = adapter.make_reflective_dataset(seed, result, ["shout.say"])
    record = dataset["shout.say"][0]
    assert set(record) == {"Inputs", "Generated Outputs", "Feedback"}
    assert record["Inputs"] == "word number 0" and record["Generated Outputs"] == "word number 0"
    assert "Task score 0.00" in record["Feedback"] and "expected 'WORD NUMBER 0'" in record["Feedback"]
    loud = adapter.evaluate(batch, {"shout.say": RULE}, capture_traces=False)
    assert loud.scores == [1.0, 1.0, 1.0] and loud.trajectories is None
    calls = len(fake_world)
    again = adapter.evaluate(batch, {"shout.say": RULE})  # same candidate, same tasks: resumed from disk
    assert again.scores == loud.scores and len(fake_world) == calls
    results = list((tmp_path / "pol/run/iter-0001").glob("gepa-*/results.jsonl"))
    assert len(results) == 2 and all(len(p.read_text().splitlines()) == 3 for p in results)
    reflection = ReflectionLM(ws.lm)
    assert RULE in reflection("I provided an assistant with the following instructions: ...")
    assert ws.lm.ledger.to_dict()["roles"]["optimizer"]["calls"] == 1


def test_gepa_learns_and_resumes_its_own_state_across_iterations(settings, fake_world, shout, tmp_path):
    config = OptimizeConfig(method="gepa", benchmark="shout", iterations=2, batch=3, val=4, test_n=0,
                            method_options={"max_metric_calls": 30})
    outcome = run_optimize(config, settings, tmp_path / "p", progress=False)
    store = PolicyStore(tmp_path / "p")
    assert store.load().render("shout.say") == f"- {RULE}"
    first, second = outcome.state.history
    assert first.accepted and first.gate["candidate_mean"] == 1.0 and first.gate["current_mean"] == 0.0
    assert not second.accepted and "unchanged" in second.note
    log = json.loads((tmp_path / "p/run/iter-0002/gepa.json").read_text())
    assert log["total_metric_calls"] <= 30 + 3 + 4 and log["best_idx"] == 1
    assert (tmp_path / "p/run/gepa/run_log.txt").exists()


# ---- MIPROv2 -------------------------------------------------------------------------------------------------------
def test_plan_trials_fits_the_budget():
    from nlgrad.methods.baselines.miprov2 import plan_trials

    assert plan_trials(60, n_val=10, minibatch=5, full_eval_steps=5) == 5  # (60 - 20) / (5 + 2)
    assert plan_trials(5, n_val=10, minibatch=5, full_eval_steps=5) == 1
    assert plan_trials(None, n_val=10, minibatch=5, full_eval_steps=5) == 6


def test_miprov2_instruction_only_on_the_dspy_rendering(settings, fake_world, shout, tmp_path):
    config = OptimizeConfig(method="miprov2", benchmark="shout", iterations=1, batch=3, val=4, test_n=0,
                            method_options={"max_rollouts": 20, "num_candidates": 2})
    outcome = run_optimize(config, settings, tmp_path / "p", progress=False)
    assert PolicyStore(tmp_path / "p").load().render("shout.say") == f"- {RULE}"
    (record,) = outcome.state.history
    assert record.accepted and record.gate["candidate_mean"] == 1.0 and record.gate["current_mean"] == 0.0
    log = json.loads((tmp_path / "p/run/iter-0001/miprov2.json").read_text())
    assert log["trials"] == 3 and log["seed"] == {"shout.say": "Repeat the text."}
    roles = outcome.ledger.to_dict()["roles"]
    assert roles["optimizer"]["calls"] >= 1  # MIPROv2's proposer went through nlgrad's LM


def test_dspy_lm_bridge_maps_rollout_ids_to_samples(settings, fake_world, tmp_path):
    from nlgrad.methods.baselines.dspy_render import make_dspy_lm, template_fields

    lm = LM(settings, sleep=lambda s: None)
    dspy_lm = make_dspy_lm(lm, "optimizer")
    assert dspy_lm("hello") == ["hello"]
    dspy_lm.copy(rollout_id=7, temperature=1.0)("hello")
    assert lm.ledger.to_dict()["roles"]["optimizer"]["calls"] == 2  # a distinct sample, not a cache hit
    dspy_lm("hello")
    assert lm.ledger.to_dict()["roles"]["optimizer"]["cached"] == 1
    assert template_fields(ShoutProgram().say) == ["text"]


# ---- TextGrad ------------------------------------------------------------------------------------------------------
def test_textgrad_step_learns_through_the_shared_gate(settings, fake_world, shout, tmp_path):
    config = OptimizeConfig(method="textgrad", benchmark="shout", iterations=1, batch=3, val=4, test_n=0)
    outcome = run_optimize(config, settings, tmp_path / "p", progress=False)
    assert PolicyStore(tmp_path / "p").load().render("shout.say") == f"- {RULE}"
    (record,) = outcome.state.history
    assert record.accepted and record.gate["wins"] == 4  # nlgrad's paired gate decided
    log = json.loads((tmp_path / "p/run/iter-0001/textgrad.json").read_text())
    assert log["updated"] == {"shout.say": RULE} and log["gradients"]["shout.say"]
    assert outcome.ledger.to_dict()["roles"]["optimizer"]["calls"] >= 3  # loss, reply and step prompts


def test_textgrad_logs_go_to_the_run_folder_not_the_working_directory(tmp_path):
    import subprocess
    import sys

    pytest.importorskip("textgrad")
    code = ("from pathlib import Path; from nlgrad.methods.baselines.textgrad_method import import_textgrad; "
            "import_textgrad(Path('run') / 'textgrad-logs')")
    env = {k: v for k, v in __import__("os").environ.items() if k != "TEXTGRAD_LOG_DIR"}
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, timeout=300)
    assert not (tmp_path / "logs").exists()
    assert [p.suffix for p in (tmp_path / "run" / "textgrad-logs").iterdir()] == [".jsonl"]


def test_textgrad_own_engine_refuses_local_models(settings, tmp_path):
    from nlgrad.methods.baselines.textgrad_method import TextGrad

    ws = workspace(settings.with_role_model("optimizer", "local/qwen2.5-coder-1.5b"), tmp_path)
    with pytest.raises(ConfigError, match="api_base"):
        TextGrad(engine="textgrad")._engine(ws)


# ---- static baselines ----------------------------------------------------------------------------------------------
def test_none_never_changes_the_policy(settings, fake_world, shout, tmp_path):
    outcome = run_optimize(OptimizeConfig(method="none", benchmark="shout", iterations=1, test_n=0), settings,
                           tmp_path / "p", progress=False)
    assert PolicyStore(tmp_path / "p").versions() == [1] and fake_world == []
    assert outcome.state.history[0].note.startswith("static baseline")


def test_human_adopts_the_benchmark_policy(settings, fake_world, shout, tmp_path):
    outcome = run_optimize(OptimizeConfig(method="human", benchmark="shout", iterations=1, val=3, test_n=0),
                           settings, tmp_path / "p", progress=False)
    store = PolicyStore(tmp_path / "p")
    assert store.versions() == [1, 2] and "UPPERCASE" in store.load().render("shout.say")
    gate = outcome.state.history[0].gate
    assert gate["accept"] and gate["candidate_mean"] == 1.0 and gate["current_mean"] == 0.0


def test_human_without_a_human_policy_is_a_clear_error(settings, fake_world, tmp_path, monkeypatch):
    serve_toy(monkeypatch, ShoutBenchmark(), ShoutProgram)
    with pytest.raises(ConfigError, match="no human-written policy"):
        run_optimize(OptimizeConfig(method="human", benchmark="shout", iterations=1, test_n=0), settings,
                     tmp_path / "p", progress=False)
