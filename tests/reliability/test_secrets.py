"""Secrets: an API key given by env (``api_key_env``) or by a config file never appears in traces, run dirs, cache
files, policy files or logs. Real ``nlgrad eval`` and ``nlgrad optimize`` subprocesses run against the fake server
(some calls fail and are retried, so error paths are covered too) with litellm's debug logging on; then every file
they wrote and everything they printed is scanned for the key."""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
from pathlib import Path

from reliability_helpers import HERE
from reliability_world import FakeOpenAIServer, FaultPlan
from typer.testing import CliRunner

KEY_ENV = "NLGRAD_SECRET_TEST_KEY"


def _forms(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [raw, base64.b64encode(raw), raw.hex().encode(), secret[8:].encode()]  # also a long partial key


def _scan(roots: list[Path], texts: dict[str, str], secret: str) -> list[str]:
    leaks = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                leaks += [f"{path} ({form[:6]!r}...)" for form in _forms(secret) if form in data]
    for name, text in texts.items():
        leaks += [f"{name} ({form[:6]!r}...)" for form in _forms(secret) if form in text.encode()]
    return leaks


def _config(path: Path, api_base: str, tmp_path: Path, role_extra: str = "") -> Path:
    roles = "".join(f'[roles.{name}]\nmodel = "openai/toy"\napi_base = "{api_base}"\napi_key_env = "{KEY_ENV}"\n'
                    f"max_tokens = 64\ntimeout_s = 0.5\n{role_extra}\n" for name in ("agent", "critic", "optimizer"))
    path.write_text(f'cache_dir = "{tmp_path / "cache"}"\nruns_dir = "{tmp_path / "runs"}"\nretries = 4\n'
                    f"backoff_base_s = 0.001\nbackoff_max_s = 0.005\n\n{roles}")
    return path


def test_api_key_from_env_never_written_or_logged(tmp_path):
    secret = "sk-nlgrad-" + secrets.token_hex(20)
    (tmp_path / "logs").mkdir()
    env = {**os.environ, KEY_ENV: secret, "NLGRAD_HOME": str(tmp_path / "home"), "LITELLM_LOG": "DEBUG",
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    outputs: dict[str, str] = {}
    faults = FaultPlan(rate=0.3, seed=2, kinds=("429", "500", "timeout", "malformed"), timeout_sleep_s=0.8)
    with FakeOpenAIServer(faults=faults) as server:
        config = _config(tmp_path / "c.toml", server.api_base, tmp_path)
        runs = {
            "eval": ["eval", "--benchmark", "toy", "--n", "3", "--run-dir", str(tmp_path / "run-eval")],
            "optimize": ["optimize", "--benchmark", "toy", "--out", str(tmp_path / "policy"), "--iterations", "1",
                         "--batch", "4", "--val", "3", "--test-n", "2"],
        }
        for name, args in runs.items():
            env["NLGRAD_TEST_DEBUG_LOG"] = str(tmp_path / "logs" / f"{name}.log")
            done = subprocess.run([sys.executable, str(HERE / "toy_cli.py"), *args, "--config", str(config)],
                                  env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
            outputs[f"{name} stdout"], outputs[f"{name} stderr"] = done.stdout, done.stderr
    assert server.stats.auth_headers[f"Bearer {secret}"] == server.stats.requests > 0  # the key was really used
    assert sum(server.stats.faults.values()) > 0
    assert (tmp_path / "logs/eval.log").stat().st_size > 10_000  # debug logging really was on
    roots = [tmp_path / "run-eval", tmp_path / "policy", tmp_path / "cache", tmp_path / "home", tmp_path / "runs",
             tmp_path / "logs"]
    written = [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "ledger.json" for p in written) and any(p.suffix == ".json" and "traces" in p.parts
                                                                  for p in written)
    assert any(p.name.startswith("v0") for p in written) and any("cache" in p.parts for p in written)
    assert _scan([r for r in roots if r.exists()], outputs, secret) == []


def test_api_key_in_config_file_is_refused_without_echoing_it(tmp_path):
    """A key pasted into the config (``api_key = ...``) is refused, since keys are named by env var, and the refusal
    does not print the key itself ('value: 'sk-...'') to the terminal or to any captured log."""
    from nlgrad.cli import app

    secret = "sk-nlgrad-" + secrets.token_hex(20)
    config = _config(tmp_path / "c.toml", "http://127.0.0.1:9/v1", tmp_path, role_extra=f'api_key = "{secret}"\n')
    result = CliRunner().invoke(app, ["eval", "--benchmark", "toy", "--config", str(config)])
    assert result.exit_code == 2
    assert "api_key" in result.output
    assert _scan([tmp_path / "runs", tmp_path / "cache"] if (tmp_path / "runs").exists() else [],
                 {"output": result.output}, secret) == []


def test_ledger_cache_and_trace_formats_have_no_credential_fields(tmp_path):
    """The cache key ignores api_base / api_key; a cache entry stores only text and token counts."""
    from nlgrad.lm.cache import cache_key

    messages = [{"role": "user", "content": "hi"}]
    a = cache_key("openai/toy", messages, {"temperature": 0, "api_key": "sk-a", "api_base": "http://a"}, 0)
    b = cache_key("openai/toy", messages, {"temperature": 0, "api_key": "sk-b", "api_base": "http://b"}, 0)
    assert a == b
