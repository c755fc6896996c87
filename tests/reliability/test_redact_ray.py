"""Ray workers get the API key (forwarded in memory) and a server that refuses it with a 401 echoing it; the program
logs each failure with its traceback on the worker. Neither the run directory nor any file of Ray's own session
(worker stdout/stderr, raylet and GCS logs) may hold the key afterwards. Before, the echoed key went verbatim into
the worker's log, the returned traces and results.jsonl."""

from __future__ import annotations

import json
import logging
import secrets
import sys

import pytest

ray = pytest.importorskip("ray")

import fake_lm  # noqa: E402
import reliability_world as world  # noqa: E402
from reliability_helpers import toy_settings  # noqa: E402
from secret_scan import find_secret  # noqa: E402

from nlgrad.errors import LMCallError  # noqa: E402
from nlgrad.lm.client import LM  # noqa: E402
from nlgrad.redact import MASK  # noqa: E402
from nlgrad.runtime.ray_executor import RayExecutor  # noqa: E402
from nlgrad.runtime.rundir import RunDir  # noqa: E402

KEY_ENV = "NLGRAD_RAY_REDACT_KEY"
TEXTS = {"dev": ["alpha", "forbidden beta", "gamma", "forbidden delta"]}


class EchoingServer(world.FakeOpenAIServer):
    """Answers like the toy server, except a prompt with "forbidden": 401, the body echoing the bearer key."""

    def _handle(self, handler, body):
        if any("forbidden" in str(m.get("content", "")) for m in body.get("messages") or []):
            key = handler.headers.get("Authorization", "").removeprefix("Bearer ")
            with self._lock:
                self.stats.requests += 1
                self.stats.auth_headers[f"Bearer {key}"] += 1
            message = f"Incorrect API key provided: {key}. You can find your API key at https://example.invalid."
            handler._send(401, json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                                     "code": "invalid_api_key"}}))
            return
        super()._handle(handler, body)


class LoggingProgram(world.ToyProgram):
    """The toy program; a failed call is logged on the worker (with its traceback) before the task fails."""

    def run(self, task, ctx):
        try:
            return super().run(task, ctx)
        except LMCallError as exc:
            logging.getLogger("nlgrad.test.worker").warning("worker call failed on %s: %s", task.id, exc,
                                                            exc_info=True)
            raise


@pytest.fixture
def ray_session():
    from ray import cloudpickle

    for module in (fake_lm, world, sys.modules[__name__]):  # workers cannot import modules under tests/
        cloudpickle.register_pickle_by_value(module)
    if ray.is_initialized():
        pytest.skip("needs its own Ray session to scan its logs")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    session = ray._private.worker._global_node.get_session_dir_path()
    yield session
    ray.shutdown()


def test_a_401_echoing_the_key_reaches_neither_the_run_dir_nor_rays_logs(ray_session, tmp_path, monkeypatch):
    from pathlib import Path

    secret = "sk-nlgrad-" + secrets.token_hex(20)
    monkeypatch.setenv(KEY_ENV, secret)
    bench = world.ToyBenchmark(texts=TEXTS)
    with EchoingServer() as server:
        lm = LM(toy_settings(tmp_path, server.api_base, api_key_env=KEY_ENV, retries=1))
        executor = RayExecutor(benchmark=bench, program=LoggingProgram(), lm=lm, workers=2,
                               run_dir=RunDir(tmp_path / "run").create(), progress=False)
        result = executor.run(bench.tasks("dev"))
    assert server.stats.auth_headers[f"Bearer {secret}"] == server.stats.requests > 0  # the workers had the key
    errors = [r.error for r in result.results if r.error]
    assert len(errors) == 2 and all("Incorrect API key provided" in e and MASK in e for e in errors), errors
    ray.shutdown()  # flush every log of the session
    session = Path(ray_session)
    logged = "".join(p.read_text(errors="replace") for p in (session / "logs").glob("worker-*"))
    assert "worker call failed on toy/dev/1" in logged and "Traceback" in logged, "the worker's log was not found"
    assert find_secret(secret, [tmp_path / "run", session]) == []
