"""Methods plug in like benchmarks: a catalog plus the ``nlgrad.methods`` entry-point group; the gate and the batch
sampler are arguments of ``run_optimize`` with defaults; a method's own decision is a typed GateDecision."""

from importlib.metadata import EntryPoint

import pytest

import nlgrad.methods.registry as registry
from nlgrad.errors import ConfigError
from nlgrad.methods import CATALOG
from nlgrad.methods.base import OptimizeConfig, Proposal
from nlgrad.methods.baselines.static import NoPolicy
from nlgrad.methods.options import check_method_options, known_options
from nlgrad.methods.strategies.acceptance import GateDecision, PairedImprovementGate
from nlgrad.optimize import run_optimize
from nlgrad.policy import PolicyStore


class PluginMethod(NoPolicy):
    """A third-party method: an installed package names it in the ``nlgrad.methods`` entry-point group."""

    name = "plugin"

    def __init__(self, *, strength: int = 1):
        self.strength = strength


def _plugin_entry_points(monkeypatch, *points: tuple[str, str]):
    eps = [EntryPoint(name=name, value=value, group=registry.GROUP) for name, value in points]
    monkeypatch.setattr(registry, "entry_points", lambda group: eps if group == registry.GROUP else [])


def test_builtins_are_listed_and_loaded():
    assert {"nlpg", "langmarl", "dmrl", "jerp"} <= set(CATALOG)
    assert {"nlpg", "langmarl", "dmrl", "jerp", "none", "human", "gepa"} <= set(registry.method_names())
    assert type(registry.load_method("none", {})).__name__ == "NoPolicy"
    with pytest.raises(ConfigError, match="unknown method; known: .*nlpg") as err:
        registry.method_target("no-such-method")
    assert err.value.field == "--method"


def test_an_entry_point_adds_a_method_with_checked_options(monkeypatch):
    _plugin_entry_points(monkeypatch, ("plugin", f"{__name__}:PluginMethod"), ("nlpg", "elsewhere:Shadow"))
    assert "plugin" in registry.method_names()
    assert registry.method_target("nlpg") == CATALOG["nlpg"]  # a built-in name wins over an entry point
    method = registry.load_method("plugin", {"strength": 3})
    assert isinstance(method, PluginMethod) and method.strength == 3
    assert known_options("plugin") == ["strength"]
    assert check_method_options("plugin", {"strength": "4"}) == {"strength": 4}


def test_a_method_whose_module_is_missing_is_named_not_crashed(monkeypatch):
    _plugin_entry_points(monkeypatch, ("gone", "nlgrad.methods.no_such_module:Gone"))
    with pytest.raises(ConfigError, match="not available in this installation"):
        registry.load_method("gone", {})
    assert registry.method_class("gone") is None  # options cannot be checked: passed through


def test_a_self_selected_decision_has_the_shape_of_a_gate_record():
    decision = GateDecision.self_selected(0.75, float("nan"), "library's choice", extra_key=7)
    assert decision.to_dict() == {"accept": True, "mean_diff": 0.75, "ci95": [0.75, 0.75], "wins": 0, "losses": 0,
                                  "candidate_mean": 0.75, "current_mean": 0.0, "reason": "library's choice",
                                  "paired_test": False, "extra_key": 7}
    paired = PairedImprovementGate(margin=0.0, min_wins=1).decide([1.0, 1.0], [0.0, 1.0]).to_dict()
    assert paired["accept"] and isinstance(paired["ci95"], list) and "details" not in paired
    assert "paired_test" not in paired


class RecordingGate:
    """Accepts nothing, and remembers what it was asked."""

    def __init__(self):
        self.calls = []

    def decide(self, candidate, current):
        self.calls.append((list(candidate), list(current)))
        return GateDecision(False, 0.0, (0.0, 0.0), 0, 0, 0.0, 0.0, "the recording gate says no")


class FirstTasksSampler:
    def __init__(self):
        self.iterations = []

    def sample(self, pool, k, iteration):
        self.iterations.append(iteration)
        return list(pool)[:k]


def test_run_optimize_takes_the_gate_and_the_sampler(settings, fake_world, shout, tmp_path):
    gate, sampler = RecordingGate(), FirstTasksSampler()
    config = OptimizeConfig(benchmark="shout", iterations=1, batch=4, val=4, test_n=0)
    outcome = run_optimize(config, settings, tmp_path / "pol", progress=False, gate=gate, sampler=sampler)
    assert sampler.iterations == [1] and len(gate.calls) == 1 and len(gate.calls[0][0]) == 4
    record = outcome.state.history[0]
    assert not record.accepted and record.gate["reason"] == "the recording gate says no"
    assert PolicyStore(tmp_path / "pol").versions() == [1]  # nothing committed past the initial policy


class DecidesItself(NoPolicy):
    def propose(self, ws, memory, iteration):
        candidate = memory.model_copy(update={"note": "same texts"})
        return Proposal(candidate, note="own decision",
                        gate_decision=GateDecision.self_selected(0.5, 0.25, "own test", accept=False, own=1))


def test_a_method_decision_skips_the_shared_gate(settings, fake_world, shout, tmp_path, monkeypatch):
    monkeypatch.setitem(CATALOG, "decides", f"{__name__}:DecidesItself")
    gate = RecordingGate()
    config = OptimizeConfig(benchmark="shout", method="decides", iterations=1, batch=2, val=2, test_n=0)
    outcome = run_optimize(config, settings, tmp_path / "pol", progress=False, gate=gate)
    record = outcome.state.history[0]
    assert gate.calls == [] and not record.accepted
    assert record.gate == {"accept": False, "mean_diff": 0.25, "ci95": [0.25, 0.25], "wins": 0, "losses": 0,
                           "candidate_mean": 0.5, "current_mean": 0.25, "reason": "own test", "paired_test": False,
                           "own": 1}
    assert PolicyStore(tmp_path / "pol").rejected()[0].reason == "own test"
