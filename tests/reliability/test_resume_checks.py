"""A resume checks what it resumes: another agent / critic model or other sampling settings are refused with a diff of
what changed (``optimize`` and ``eval --run-dir``), before any work or write; error results are run again."""

from __future__ import annotations

import json

import pytest
from reliability_helpers import toy_settings

from nlgrad.errors import ConfigError
from nlgrad.evaluate import EvalRequest, run_eval
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize


def _config():
    return OptimizeConfig(benchmark="toy", iterations=2, batch=2, val=2, test_n=0)


def _settings_with(settings, role, **change):
    roles = dict(settings.roles)
    roles[role] = roles[role].model_copy(update=change)
    return settings.model_copy(update={"roles": roles})


@pytest.mark.parametrize("role, change, shown", [
    ("agent", {"model": "openai/other-toy"}, "agent.model: 'openai/toy' -> 'openai/other-toy'"),
    ("agent", {"temperature": 0.7}, "agent.temperature: 0.0 -> 0.7"),
    ("critic", {"max_tokens": 99}, "critic.max_tokens: 64 -> 99"),
])
def test_optimize_resume_with_other_models_is_refused_with_a_diff(toy, server, tmp_path, role, change, shown):
    settings = toy_settings(tmp_path, server.api_base)
    out = tmp_path / "p"
    run_optimize(_config(), settings, out, progress=False, stop_after=1)
    saved = {p.name: p.read_bytes() for p in (out / "run").iterdir() if p.is_file()}
    before = server.stats.requests
    with pytest.raises(ConfigError, match="other models") as info:
        run_optimize(_config(), _settings_with(settings, role, **change), out, progress=False)
    assert shown in str(info.value)
    assert server.stats.requests == before
    assert {p.name: p.read_bytes() for p in (out / "run").iterdir() if p.is_file()} == saved
    outcome = run_optimize(_config(), settings, out, progress=False)  # the same settings still resume
    assert outcome.state.completed == 2


def _eval(tmp_path, settings, run_dir, **kw):
    request = EvalRequest(**{"benchmark": "toy", "n": 3, "workers": 1, "run_dir": str(run_dir), **kw})
    return run_eval(request, settings, progress=False)


def test_eval_resume_with_another_model_is_refused_and_config_kept(toy, server, tmp_path):
    settings = toy_settings(tmp_path, server.api_base)
    run_dir = tmp_path / "run"
    _eval(tmp_path, settings, run_dir)
    config_before = (run_dir / "config.json").read_text()
    before = server.stats.requests
    with pytest.raises(ConfigError, match="other settings") as info:
        _eval(tmp_path, _settings_with(settings, "agent", model="openai/other-toy"), run_dir)
    assert "roles.agent.model: 'openai/toy' -> 'openai/other-toy'" in str(info.value)
    assert "field: --run-dir" in str(info.value)
    assert (run_dir / "config.json").read_text() == config_before  # not overwritten
    assert server.stats.requests == before
    with pytest.raises(ConfigError, match="split: 'dev' -> 'train'"):
        _eval(tmp_path, settings, run_dir, split="train")
    # what does not change the results may differ: workers, and the critic's model (eval does not use it)
    _eval(tmp_path, _settings_with(settings, "critic", model="openai/other-toy"), run_dir, workers=2)


def _results(run_dir):
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]


def _fail_first_task(run_dir):
    """Rewrite the first task's saved result as an error (what a transient failure leaves)."""
    rows = _results(run_dir)
    rows[0].update(error="LMCallError: connection reset", score=0.0, success=False)
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows[0]["task_id"]


def test_error_results_are_run_again_on_resume(toy, server, tmp_path):
    settings = toy_settings(tmp_path, server.api_base)
    run_dir = tmp_path / "run"
    first, _ = _eval(tmp_path, settings, run_dir)
    failed = _fail_first_task(run_dir)
    result, _ = _eval(tmp_path, settings, run_dir)
    again = {r.task_id: r for r in result.results}
    assert again[failed].error is None  # the saved error result is run again, not read back as final
    assert [r.score for r in result.results] == [r.score for r in first.results]
    assert result.summary["errors"] == 0


def test_error_results_can_be_kept(toy, server, tmp_path):
    settings = toy_settings(tmp_path, server.api_base)
    run_dir = tmp_path / "run"
    _eval(tmp_path, settings, run_dir)
    failed = _fail_first_task(run_dir)
    result, _ = _eval(tmp_path, settings, run_dir, retry_errors=False)
    assert {r.task_id: r.error for r in result.results}[failed] == "LMCallError: connection reset"
