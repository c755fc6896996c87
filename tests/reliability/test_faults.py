"""LM faults (429, 500, 503, timeouts, empty and malformed replies) injected by a real HTTP server at a fixed, seeded
rate: ``eval`` and ``optimize`` complete, every retry is in the ledger, and the results equal a fault-free run."""

from __future__ import annotations

import json

import pytest
from reliability_helpers import policy_versions, result_rows, toy_settings
from reliability_world import FAULT_KINDS, FakeOpenAIServer, FaultPlan

from nlgrad.evaluate import EvalRequest, run_eval
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize

FAULTY = dict(timeout_sleep_s=0.5)  # a "timeout" stalls past the client's timeout_s below
CLIENT_TIMEOUT_S = 0.25


def _eval(tmp_path, server, name, n=8, workers=2, **settings_kw):
    request = EvalRequest(benchmark="toy", split="dev", n=n, workers=workers, run_dir=str(tmp_path / name))
    result, lm = run_eval(request, toy_settings(tmp_path, server.api_base, f"cache-{name}", **settings_kw),
                          progress=False)
    return result, lm


def _faults(server) -> int:
    return sum(server.stats.faults.values())


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind_is_retried_and_counted(toy, tmp_path, kind):
    with FakeOpenAIServer() as clean:
        reference, _ = _eval(tmp_path, clean, "clean", n=3, workers=1)
    with FakeOpenAIServer(faults=FaultPlan(rate=1.0, kinds=(kind,), max_faults=2, **FAULTY)) as faulty:
        result, lm = _eval(tmp_path, faulty, "faulty", n=3, workers=1, timeout_s=CLIENT_TIMEOUT_S)
    assert faulty.stats.faults[kind] == 6  # two failed attempts for each of the 3 requests
    assert result.summary["errors"] == 0
    assert result_rows(tmp_path / "faulty") == result_rows(tmp_path / "clean")
    assert [r.output for r in result.results] == [r.output for r in reference.results]
    total = lm.ledger.total()
    assert (total.calls, total.retries, total.errors) == (3, 6, 0)
    saved = json.loads((tmp_path / "faulty/ledger.json").read_text())["total"]
    assert saved["retries"] == 6
    retries_in_traces = [n["retries"] for r in result.results
                         for n in _trace(tmp_path / "faulty", r.task_id)["nodes"] if n["kind"] == "module"]
    assert retries_in_traces == [2, 2, 2]


def _trace(run_dir, task_id):
    from nlgrad.runtime.rundir import RunDir

    return json.loads(RunDir(run_dir).trace_path(task_id).read_text())


def test_eval_under_mixed_faults_equals_fault_free_run(toy, tmp_path):
    with FakeOpenAIServer() as clean:
        _, clean_lm = _eval(tmp_path, clean, "clean", n=12, workers=3)
    with FakeOpenAIServer(faults=FaultPlan(rate=0.5, seed=11, max_faults=3, **FAULTY)) as faulty:
        result, lm = _eval(tmp_path, faulty, "faulty", n=12, workers=3, timeout_s=CLIENT_TIMEOUT_S)
    assert _faults(faulty) >= 6 and len(faulty.stats.faults) >= 4  # several kinds really happened
    assert result.summary["errors"] == 0 and result.summary["n"] == 12
    assert result_rows(tmp_path / "faulty") == result_rows(tmp_path / "clean")
    assert lm.ledger.total().retries == _faults(faulty)  # every failed attempt is a counted retry
    assert lm.ledger.total().calls == clean_lm.ledger.total().calls == 12


def test_optimize_under_faults_equals_fault_free_run(toy, tmp_path):
    config = OptimizeConfig(benchmark="toy", iterations=2, batch=4, val=4, test_n=4, workers=2)
    with FakeOpenAIServer() as clean:
        ref = run_optimize(config, toy_settings(tmp_path, clean.api_base, "cache-clean"), tmp_path / "clean",
                           progress=False)
    with FakeOpenAIServer(faults=FaultPlan(rate=0.35, seed=5, max_faults=3, **FAULTY)) as faulty:
        out = run_optimize(config, toy_settings(tmp_path, faulty.api_base, "cache-faulty", timeout_s=CLIENT_TIMEOUT_S),
                           tmp_path / "faulty", progress=False)
    assert _faults(faulty) >= 5
    assert out.state.finished and out.final_version == ref.final_version == 2
    assert policy_versions(tmp_path / "faulty") == policy_versions(tmp_path / "clean")
    assert [(h.iteration, h.accepted, h.n_ops, h.batch_mean) for h in out.state.history] == \
        [(h.iteration, h.accepted, h.n_ops, h.batch_mean) for h in ref.state.history]
    assert out.test["final"]["scores"] == ref.test["final"]["scores"] == [1.0] * 4
    assert out.ledger.total().retries == _faults(faulty)
    assert out.ledger.total().calls == ref.ledger.total().calls
    assert out.ledger.total().errors == 0
    saved = json.loads((tmp_path / "faulty/run/ledger.json").read_text())["total"]
    assert saved["retries"] == _faults(faulty)


def test_fatal_errors_are_not_retried(toy, tmp_path):
    """401 is an answer, not a hiccup: no retries, the task is an error result, the batch goes on."""
    with FakeOpenAIServer(faults=FaultPlan(rate=1.0, kinds=("401",), max_faults=99)) as server:
        result, lm = _eval(tmp_path, server, "auth", n=2, workers=1)
    assert server.stats.requests == 2
    assert result.summary["errors"] == 2 and all("AuthenticationError" in r.error for r in result.results)
    assert lm.ledger.total().retries == 0 and lm.ledger.total().errors == 2


def test_retries_exhausted_is_an_error_result_not_a_crash(toy, tmp_path):
    with FakeOpenAIServer(faults=FaultPlan(rate=1.0, kinds=("503",), max_faults=99)) as server:
        result, lm = _eval(tmp_path, server, "down", n=2, workers=1, retries=2)
    assert server.stats.requests == 6  # 1 + 2 retries per task
    assert result.summary["errors"] == 2 and all("ServiceUnavailableError" in r.error for r in result.results)
    assert lm.ledger.total().retries == 4 and lm.ledger.total().errors == 2


def test_no_auth_server_needs_no_key(toy, tmp_path, monkeypatch):
    """A vLLM / SGLang / llama.cpp server without auth, named by api_base and no api_key_env, just works.

    Guards against litellm's openai provider refusing to call without *some* key ("Missing credentials"), which it
    maps to an InternalServerError that nlgrad would retry as if it were transient, failing every task."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer() as server:
        result, lm = _eval(tmp_path, server, "nokey", n=2, workers=1, retries=1, api_key_env=None)
    assert result.summary["errors"] == 0, result.results[0].error
    assert server.stats.requests == 2
