"""A provider that refuses the key with a 401 whose body echoes it (whole, and cut) never gets the key into a stored
error: not the LMCallError message, a trace (node error, the task's error and traceback), results.jsonl, nor a log
record nlgrad writes about the failure. Before, the provider's body went verbatim into all of them."""

from __future__ import annotations

import logging
import secrets

import litellm
import pytest
import reliability_world as world
from reliability_helpers import toy_settings
from secret_scan import find_secret

from nlgrad.errors import LMCallError
from nlgrad.lm.client import LM
from nlgrad.redact import MASK
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.rundir import RunDir
from nlgrad.runtime.trace import Trace

KEY_ENV = "NLGRAD_REDACT_TEST_KEY"


@pytest.fixture
def secret(monkeypatch):
    value = "sk-nlgrad-" + secrets.token_hex(20)
    monkeypatch.setenv(KEY_ENV, value)
    return value


@pytest.fixture
def refusing_provider(monkeypatch, secret):
    """litellm.completion raises the AuthenticationError a provider's 401 becomes, echoing the key it was given."""
    seen = []

    def completion(*args, api_key=None, **kwargs):
        seen.append(api_key)
        raise litellm.AuthenticationError(
            message=f"Error code: 401 - {{'error': {{'message': 'Incorrect API key provided: {api_key}. Key ending "
                    f"{api_key[10:]} is revoked.', 'type': 'invalid_request_error', 'code': 'invalid_api_key'}}}}",
            llm_provider="openai", model="toy")

    monkeypatch.setattr(litellm, "completion", completion)
    return seen


def _lm(tmp_path):
    return LM(toy_settings(tmp_path, "http://127.0.0.1:9/v1", api_key_env=KEY_ENV, retries=1))


def test_lm_call_error_does_not_repeat_the_echoed_key(tmp_path, secret, refusing_provider):
    with pytest.raises(LMCallError) as info:
        _lm(tmp_path).complete("agent", [{"role": "user", "content": "hi"}])
    assert refusing_provider == [secret]  # the key really was sent, and the provider echoed it
    assert "AuthenticationError" in str(info.value) and "Incorrect API key provided" in str(info.value)
    assert MASK in str(info.value)
    assert find_secret(secret, texts={"LMCallError": str(info.value)}) == []


def test_traces_and_results_of_a_refused_key_hold_no_key(tmp_path, secret, refusing_provider):
    bench = world.ToyBenchmark()
    run_dir = RunDir(tmp_path / "run").create()
    executor = Executor(benchmark=bench, program=world.ToyProgram(), lm=_lm(tmp_path), workers=1, run_dir=run_dir,
                        progress=False)
    result = executor.run(bench.tasks("dev", 2))
    assert result.summary["errors"] == 2
    trace = Trace.load(run_dir.trace_path(result.results[0].task_id))
    node_error = trace.module_calls()[0]["error"]
    assert "Incorrect API key provided" in node_error and MASK in node_error  # the error is kept, the key is not
    assert "AuthenticationError" in trace.graph.graph["traceback"]  # the chained provider error is in it
    assert MASK in result.results[0].error and MASK in result.results[0].feedback
    assert find_secret(secret, [tmp_path / "run"]) == []


def test_a_log_record_about_the_refusal_holds_no_key(tmp_path, secret, refusing_provider):
    """What nlgrad logs when a call fails (``critic skipped ...: <error>``, with its traceback), as a log file gets it."""
    lm = _lm(tmp_path)  # knows the key's variable from here on
    try:
        lm.complete("agent", [{"role": "user", "content": "hi"}])
    except LMCallError as exc:
        failure = exc
    handler = logging.FileHandler(tmp_path / "nlgrad.log")
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        logging.getLogger("nlgrad.credit.critic").warning("critic skipped %s: %s", "task 1", failure,
                                                          exc_info=failure)
        logging.getLogger("nlgrad.test").error("raw provider error: %s", failure.__cause__)
    finally:
        root.removeHandler(handler)
        handler.close()
    text = (tmp_path / "nlgrad.log").read_text()
    assert "critic skipped task 1" in text and "Traceback" in text and "raw provider error" in text
    assert text.count(MASK) >= 3
    assert find_secret(secret, [tmp_path]) == []
