"""``nlgrad local start|status|stop`` through the CLI, with the stand-in server in place of a model (no model runs)."""

from __future__ import annotations

import pytest
from fixtures.fake_backend import FakeBackend, fake_model_home
from typer.testing import CliRunner

from nlgrad.cli import app
from nlgrad.lm import local_server
from nlgrad.lm.local_models import BUILTIN_MODELS
from nlgrad.lm.local_server import LocalServers, _alive

MODEL = "qwen2.5-coder-0.5b"
runner = CliRunner()


@pytest.fixture
def home(tmp_path, monkeypatch):
    fake_model_home(tmp_path, monkeypatch)
    monkeypatch.setenv("NLGRAD_LOCAL_SLOTS", "2")
    monkeypatch.delenv("NLGRAD_LOCAL_SERVER", raising=False)
    monkeypatch.delenv("NLGRAD_LOCAL_DRAFT", raising=False)
    monkeypatch.setattr(local_server, "select_backend", FakeBackend)  # what `LocalServers()` starts
    yield tmp_path
    LocalServers().stop(MODEL)  # a detached server the test left running


def local(*args: str) -> str:
    result = runner.invoke(app, ["local", *args])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())  # rich wraps long lines


def test_start_status_stop(home):
    assert local("status") == " ".join(f"local/{name}: not running" for name in sorted(BUILTIN_MODELS))

    started = local("start", MODEL)
    info = LocalServers().status(MODEL)
    assert info is not None and info.owner == "detached" and (info.backend, info.slots) == ("llama-server", 2)
    assert started.startswith(f"local/{MODEL} serving at {info.api_base} with llama-server, 2 slot(s) "
                              f"(pid {info.pid}, log ")
    assert MODEL not in LocalServers._started_here  # detached: outlives this process, not stopped at exit

    status = local("status")
    assert f"local/{MODEL}: running at {info.api_base} with llama-server, 2 slot(s) (pid {info.pid}, detached)" \
        in status
    assert all(f"local/{name}: not running" in status for name in BUILTIN_MODELS if name != MODEL)

    assert local("start", MODEL).startswith(f"local/{MODEL} serving at {info.api_base}")  # reused, not restarted
    assert LocalServers().status(MODEL).pid == info.pid

    assert local("stop", MODEL) == f"local/{MODEL}: stopped"
    assert not _alive(info.pid) and LocalServers().status(MODEL) is None
    assert f"local/{MODEL}: not running" in local("status")
    assert local("stop", MODEL) == f"local/{MODEL}: was not running"


def test_start_of_an_unknown_model_is_one_error_line(home):
    result = runner.invoke(app, ["local", "start", "no-such-model"])
    assert result.exit_code == 2  # an nlgrad error: one red line, no traceback
    assert "unknown local model 'local/no-such-model'" in " ".join(result.output.split())
