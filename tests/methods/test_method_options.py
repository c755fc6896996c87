"""``--method-option``: parsing, unknown names and bad values, the value reaching the method, and resume."""

from __future__ import annotations

import functools
import json

import pytest
from typer.testing import CliRunner

import nlgrad.optimize as optimize
from nlgrad.cli import app
from nlgrad.methods.options import (MethodOptionError, check_method_options, known_options,
                                    parse_compare_options, parse_method_options, parse_value, split_option)


def cli(*args: str):
    """Exit code and the output (stdout + stderr) with all whitespace removed (Rich wraps at the terminal width)."""
    result = CliRunner().invoke(app, list(args))
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    return result.exit_code, "".join(text.split())


def squash(text: str) -> str:
    return "".join(text.split())


def optimize_args(out, tmp_path, *extra: str) -> list[str]:
    return ["optimize", "--benchmark", "shout", "--out", str(out), "--iterations", "2", "--batch", "4", "--val", "4",
            "--test-n", "0", "--lm", "openai/test-model", "--critic-lm", "openai/test-model",
            "--cache-dir", str(tmp_path / "cache"), *extra]


# ---------------------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize("text, value", [
    ("3", 3), ("0.5", 0.5), ("true", True), ("null", None), ('["a", "b"]', ["a", "b"]), ('{"add": 1}', {"add": 1}),
    ("none", "none"), ("lexical", "lexical"), ("module:Factory", "module:Factory"), ("", ""), ('"3"', "3"),
])
def test_values_are_json_when_they_parse_else_strings(text, value):
    assert parse_value(text) == value


def test_names_with_and_without_a_method_prefix():
    assert split_option("k=3") == (None, "k", 3)
    assert split_option("jerp.k=3") == ("jerp", "k", 3)
    assert split_option("editor=pkg.mod:Make=1") == (None, "editor", "pkg.mod:Make=1")  # only the first = splits
    for bad in ("k", "=3", ".k=3", "jerp.=3"):
        with pytest.raises(MethodOptionError, match="NAME=VALUE"):
            split_option(bad)


def test_options_are_checked_and_coerced_against_the_constructor():
    options = parse_method_options(["k=3", "jerp.gate=none", "utility_weight=1", "min_utility=null", "k=2"],
                                   method="jerp")
    assert options == {"k": 2, "gate": "none", "utility_weight": 1.0, "min_utility": None}  # last one wins
    assert parse_method_options(["llm_aggregate=True"], method="langmarl") == {"llm_aggregate": True}
    assert parse_method_options(['routes=["shout.say"]'], method="dmrl") == {"routes": ["shout.say"]}
    # langmarl_global takes **options: its options are LangMARL's
    assert "credit_mode" in known_options("langmarl_global") and "max_lessons" in known_options("langmarl_global")
    with pytest.raises(MethodOptionError, match="expects int"):
        parse_method_options(["k=many"], method="jerp")
    with pytest.raises(MethodOptionError, match="Literal"):
        check_method_options("jerp", {"gate": "maybe"})
    with pytest.raises(MethodOptionError, match="for method 'jerp' but --method is 'nlpg'"):
        parse_method_options(["jerp.k=3"], method="nlpg")
    assert parse_compare_options(["jerp.k=3", "gepa.use_merge=true"], methods=["jerp", "gepa"]) == \
        {"jerp": {"k": 3}, "gepa": {"use_merge": True}}
    with pytest.raises(MethodOptionError, match="METHOD.NAME=VALUE"):
        parse_compare_options(["k=3"], methods=["jerp"])
    with pytest.raises(MethodOptionError, match="not in --methods"):
        parse_compare_options(["jerp.k=3"], methods=["nlpg"])


def test_unknown_option_names_the_option_the_method_and_its_options(tmp_path, fake_world, shout):
    with pytest.raises(MethodOptionError) as info:
        check_method_options("nlpg", {"max_itemz": 3})
    message = str(info.value)
    assert "'max_itemz'" in message and "'nlpg'" in message and "max_items" in message and "loop_threshold" in message
    out = tmp_path / "p"
    code, text = cli(*optimize_args(out, tmp_path, "--method", "jerp", "--method-option", "top_k=3"))
    assert code == 2 and "Traceback" not in text, text
    assert squash("unknown option 'top_k' for method 'jerp'") in text and "capacity" in text, text
    assert squash("field: --method-option") in text and not out.exists() and not fake_world
    code, text = cli("compare", "--benchmark", "shout", "--methods", "none,nlpg", "--budget-rollouts", "4",
                     "--out", str(tmp_path / "cmp"), "--lm", "openai/test-model", "--method-option", "nlpg.bogus=1")
    assert code == 2 and squash("unknown option 'bogus' for method 'nlpg'") in text, text
    assert not (tmp_path / "cmp").exists()


# ---------------------------------------------------------------------------------------------- end to end
def test_option_values_reach_the_method_and_are_saved(tmp_path, fake_world, shout, monkeypatch):
    built = []
    real = optimize.load_method

    def spy(name, options):
        built.append(real(name, options))
        return built[-1]

    monkeypatch.setattr(optimize, "load_method", spy)
    out = tmp_path / "p"
    code, text = cli(*optimize_args(out, tmp_path, "--method-option", "max_corrections=1",
                                    "--method-option", "nlpg.loop_threshold=7"))
    assert code == 0, text
    assert built[0].max_corrections == 1 and built[0].loop_threshold == 7
    saved = json.loads((out / "run/config.json").read_text())
    assert saved["method"] == "nlpg" and saved["method_options"] == {"max_corrections": 1, "loop_threshold": 7}
    # max_corrections=1 reached the proposer: its prompt asks for one lesson and only the first of three is kept
    assert any("Write at most 1 lessons" in m[-1]["content"] for m in fake_world)
    assert len(json.loads((out / "run/iter-0001/proposals.json").read_text())["candidates"]) == 1


def test_resume_must_use_the_same_options(tmp_path, fake_world, shout, monkeypatch):
    out = tmp_path / "p"
    args = optimize_args(out, tmp_path, "--method-option", "max_corrections=1")
    real = optimize.run_optimize
    monkeypatch.setattr(optimize, "run_optimize", functools.partial(real, stop_after=1))  # "killed" after iter 1
    assert cli(*args)[0] == 0
    monkeypatch.setattr(optimize, "run_optimize", real)
    state = (out / "run/state.json").read_text()
    config = (out / "run/config.json").read_text()
    assert json.loads(state)["completed"] == 1
    for other in (optimize_args(out, tmp_path, "--method-option", "max_corrections=2"), optimize_args(out, tmp_path)):
        code, text = cli(*other)
        assert code == 2 and "differentsettings" in text, text
        assert squash("method_options: {'max_corrections': 1} ->") in text, text
        assert (out / "run/state.json").read_text() == state and (out / "run/config.json").read_text() == config
    code, text = cli(*args)  # the same options: resumes and finishes
    assert code == 0, text
    final = json.loads((out / "run/state.json").read_text())
    assert final["completed"] == 2 and final["finished"]
    assert json.loads((out / "run/config.json").read_text())["method_options"] == {"max_corrections": 1}
