"""The advantage-estimator registry: every method is an estimator with its own options, TrainConfig and `nlgrad train`
are built from those options, and the trainer's advantages come from the registered estimator (no torch)."""

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from nlgrad.trainer import estimators
from nlgrad.trainer.cli import config_values, train_signature
from nlgrad.trainer.config import METHODS, TrainConfig
from nlgrad.trainer.estimators import ESTIMATORS, StepAdvantages, estimator_options, get_estimator


def test_every_method_is_a_registered_estimator_with_its_own_options():
    assert METHODS == ("grpo", "gigpo", "progpo", "cigpo", "hidifftir", "milegpo", "tigpo", "actguide", "tapo",
                       "stapo", "iapo")
    assert {name: [o.name for o in e.options] for name, e in ESTIMATORS.items()} == {
        "grpo": [], "gigpo": ["omega", "gamma", "progpo_step"], "progpo": ["gamma", "progpo_step"],
        "cigpo": ["ig_weight_start", "ig_weight_end", "ig_schedule"],
        "hidifftir": ["difficulty_weight", "route_failure_weight"],
        "milegpo": ["gamma", "milestone_coef", "milestone_prior"], "tigpo": ["omega", "gamma", "revisit_share"],
        "actguide": ["guide_hint"], "tapo": ["tapo_coef", "tapo_max_tokens"],
        "stapo": ["stapo_z", "stapo_scale", "stapo_penalty"], "iapo": ["iapo_coef"]}
    # capabilities the loop asks for, instead of the method's name
    assert [n for n, e in ESTIMATORS.items() if e.revisits] == ["tigpo"]
    assert [n for n, e in ESTIMATORS.items() if e.guides_zero_groups] == ["actguide"]
    assert [n for n, e in ESTIMATORS.items() if e.next_observation_loss] == ["tapo"]
    assert [n for n, e in ESTIMATORS.items() if e.needs_gold_answer] == ["cigpo"]
    assert {n: TrainConfig(benchmark="b", model="m", method=n).effective_normalize() for n in ("gigpo", "tigpo",
                                                                                                 "grpo", "stapo")} \
        == {"gigpo": "mean", "tigpo": "mean", "grpo": "std", "stapo": "std"}
    with pytest.raises(ValueError, match="unknown method 'ppo'"):
        get_estimator("ppo")


def test_train_config_and_the_train_command_are_built_from_the_options():
    options = estimator_options()
    config = TrainConfig(benchmark="b", model="m")
    parameters = train_signature().parameters
    for name, option in options.items():
        assert getattr(config, name) == option.default  # a TrainConfig field with the option's default
        field = TrainConfig.model_fields[name]
        assert field.description == option.help
        assert parameters[name].default.default == option.default  # an `nlgrad train` flag
        assert option.flag in parameters[name].default.param_decls
    assert "--stapo-penalty" in options["stapo_penalty"].flag and options["gamma"] is ESTIMATORS["tigpo"].options[1]
    # bounds come with the option
    with pytest.raises(ValidationError, match="stapo_penalty"):
        TrainConfig(benchmark="b", model="m", stapo_penalty=-1.0)
    with pytest.raises(ValidationError, match="ig_schedule"):
        TrainConfig(benchmark="b", model="m", method="cigpo", ig_schedule="exp")
    # an option only its methods may set: progpo_step with another method is refused, naming them
    with pytest.raises(ValidationError, match="progpo_step applies to --method gigpo or progpo"):
        TrainConfig(benchmark="b", model="m", method="grpo", progpo_step=True)
    # the command's values become TrainConfig's: general ones, estimator ones, gradient_checkpointing renamed
    values = {name: p.default.default for name, p in parameters.items()}
    values.update(benchmark="twx/coin", model="tiny", method="stapo", stapo_penalty=0.2, grad_ckpt=True)
    built = TrainConfig(**config_values(values))
    assert (built.method, built.stapo_penalty, built.gradient_checkpointing) == ("stapo", 0.2, True)


def test_the_trainer_takes_its_advantages_from_the_registered_estimator(monkeypatch):
    pytest.importorskip("torch")
    from nlgrad.trainer.credit import assign_advantages

    seen = {}

    class Constant:
        name, summary, options, default_normalize = "grpo", "test", (), "mean"
        revisits = guides_zero_groups = next_observation_loss = needs_gold_answer = False

        def advantages(self, groups, context):
            seen.update(step=context.step, normalize=context.normalize, revisits=context.revisit_ids)
            return StepAdvantages([[[0.25 * (i + 1)] * len(ep.turns) for i, ep in enumerate(g)] for g in groups],
                                  {"constant": True})

    monkeypatch.setitem(estimators.ESTIMATORS, "grpo", Constant())
    turn = lambda: SimpleNamespace(advantage=0.0)  # noqa: E731
    group = [SimpleNamespace(turns=[turn(), turn()], task=SimpleNamespace(id="k")),
             SimpleNamespace(turns=[turn()], task=SimpleNamespace(id="k"))]
    # the estimator's default normalization ("mean") is the one in effect
    stats = assign_advantages([group], TrainConfig(benchmark="b", model="m"), 3, revisit_ids={"k"})
    assert stats == {"constant": True} and seen == {"step": 3, "normalize": "mean", "revisits": frozenset({"k"})}
    assert [[t.advantage for t in ep.turns] for ep in group] == [[0.25, 0.25], [0.5]]
