"""Crash: ``nlgrad optimize`` killed with SIGKILL at seeded random points several times, then resumed, ends exactly
like an uninterrupted run: same policy versions, results and ledger; no partial or duplicate version files.

The runs are real subprocesses of the CLI (``toy_cli.py`` registers the toy benchmark) against a fake OpenAI server
in this process. Kill times are drawn from a seeded RNG over the *remaining* work (estimated from the uninterrupted
run's pace and the requests the server has seen), so kills land all over the run: rollouts, critique, gate, commit,
final test.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reliability_helpers import HERE, TOY_KEY_ENV, policy_versions, result_rows, toy_settings, write_toy_config
from reliability_world import FakeOpenAIServer

from nlgrad.errors import ConfigError
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize
from nlgrad.policy import PolicyStore
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.rundir import RunDir

KILLS = 3
ARGS = ["--benchmark", "toy", "--iterations", "3", "--batch", "4", "--val", "4", "--test-n", "4", "--workers", "2"]


def _command(out: Path, config: Path) -> list[str]:
    return [sys.executable, str(HERE / "toy_cli.py"), "optimize", "--out", str(out), "--config", str(config), *ARGS]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, TOY_KEY_ENV: "sk-toy-not-secret", "NLGRAD_HOME": str(tmp_path / "home"),
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}


def _wait_first_request(proc, server, before: int, limit_s: float = 300) -> bool:
    """Block until the server sees a new request from ``proc`` (True) or ``proc`` exits (False)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.stats.requests > before:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    proc.kill()
    raise AssertionError("the optimize subprocess made no progress")


def _files(root: Path, pattern: str) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob(pattern))}


def _rejected(out: Path) -> list[dict]:
    return [{k: v for k, v in r.model_dump(mode="json").items() if k != "created"}
            for r in PolicyStore(out).rejected()]


def _ledger(out: Path) -> dict:
    return json.loads((out / "run/ledger.json").read_text())["total"]


def test_sigkill_at_random_points_then_resume_matches_uninterrupted(tmp_path):
    env = _env(tmp_path)
    with FakeOpenAIServer(latency_s=0.02) as server_a:
        config_a = write_toy_config(tmp_path / "a.toml", server_a.api_base, cache_dir=tmp_path / "cache-a",
                                    runs_dir=tmp_path / "runs")
        proc = subprocess.Popen(_command(tmp_path / "A", config_a), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        out, errs = proc.communicate(timeout=600)
        assert proc.returncode == 0, errs[-3000:]
        total_requests = server_a.stats.requests

    rng = random.Random(20240611)
    kills = []
    with FakeOpenAIServer(latency_s=0.02) as server_b:
        config_b = write_toy_config(tmp_path / "b.toml", server_b.api_base, cache_dir=tmp_path / "cache-b",
                                    runs_dir=tmp_path / "runs")
        for attempt in range(KILLS + 2):  # a kill after the run's last request leaves nothing to kill
            if sum(code == -signal.SIGKILL for _, code in kills) >= KILLS:
                break
            before = server_b.stats.requests
            log = tmp_path / f"attempt-{attempt}.log"
            with open(log, "w") as sink:
                proc = subprocess.Popen(_command(tmp_path / "B", config_b), env=env, stdout=sink,
                                        stderr=subprocess.STDOUT)
            if not _wait_first_request(proc, server_b, before):
                proc.wait(timeout=600)
                assert proc.returncode == 0, log.read_text()[-3000:]
                break  # nothing left to do against the server: it finished
            # kill after a random number of further LM requests (not a random delay: on a loaded machine a
            # delay measured in seconds could outlast the whole remaining run)
            remaining = max(1, total_requests - server_b.stats.requests)
            target = server_b.stats.requests + rng.randint(0, max(0, int(0.8 * remaining) - 1))
            deadline = time.monotonic() + 300
            while proc.poll() is None and server_b.stats.requests < target and time.monotonic() < deadline:
                time.sleep(0.002)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            kills.append((target, proc.returncode))
        final = subprocess.run(_command(tmp_path / "B", config_b), env=env, capture_output=True, text=True,
                               timeout=600)
        assert final.returncode == 0, final.stderr[-3000:]
    assert sum(code == -signal.SIGKILL for _, code in kills) >= 2, kills

    a, b = tmp_path / "A", tmp_path / "B"
    # policy versions: identical (except commit times), contiguous, no partial or duplicate files
    assert policy_versions(b) == policy_versions(a)
    store = PolicyStore(b)
    assert store.versions() == list(range(1, len(store.versions()) + 1))
    assert sorted(p.name for p in b.glob("v*.json")) == [f"v{v:04d}.json" for v in store.versions()]
    assert store.manifest_is_current()
    assert _rejected(b) == _rejected(a)
    # results: every run dir holds the same per-task results, each task once; same gate decisions and test scores
    results_a, results_b = _files(a / "run", "results.jsonl"), _files(b / "run", "results.jsonl")
    assert sorted(results_b) == sorted(results_a)
    for name in results_a:
        lines = [json.loads(x) for x in results_b[name].read_text().splitlines() if x.strip()]
        assert len({r["task_id"] for r in lines}) == len(lines), f"duplicate results in {name}"
        assert result_rows(results_b[name].parent) == result_rows(results_a[name].parent), name
    for name, path in _files(a / "run", "gate.json").items():
        assert json.loads((b / "run" / name).read_text()) == json.loads(path.read_text()), name
    test_a, test_b = (json.loads((x / "run/final/test.json").read_text()) for x in (a, b))
    assert test_b["final"]["scores"] == test_a["final"]["scores"]
    assert test_b["initial"]["scores"] == test_a["initial"]["scores"]
    # ledger: nothing lost. Every call that reached the model is counted (a reply received just before a kill may
    # be paid and counted twice: at most `workers` calls per kill), and the calls repeated after a resume are hits.
    la, lb = _ledger(a), _ledger(b)
    n_kills = sum(code == -signal.SIGKILL for _, code in kills)
    assert la["calls"] <= lb["calls"] <= la["calls"] + 2 * n_kills, (la, lb, kills)
    assert la["prompt_tokens"] <= lb["prompt_tokens"]
    assert lb["errors"] == la["errors"] == 0


# ---------------------------------------------------------------------------------------------- deterministic windows
def test_torn_result_line_does_not_swallow_the_next_record(tmp_path, server):
    """A kill mid-append leaves a line without its newline; the next append must start on a fresh line, or the
    next task's record is glued to the fragment and lost (it is re-run on every later resume)."""
    import reliability_world as world
    from nlgrad.lm.client import LM

    run_dir = RunDir(tmp_path / "run").create()
    tasks = world.ToyBenchmark().tasks("dev", 3)
    lm = LM(toy_settings(tmp_path, server.api_base))
    Executor(benchmark=world.ToyBenchmark(), program=world.ToyProgram(), lm=lm, run_dir=run_dir,
             progress=False).run(tasks[:1])
    with open(run_dir.path / "results.jsonl", "a") as fh:
        fh.write('{"task_id": "toy/dev/1", "sco')  # SIGKILL mid-write
    Executor(benchmark=world.ToyBenchmark(), program=world.ToyProgram(), lm=lm, run_dir=run_dir,
             progress=False).run(tasks, resume=True)
    assert sorted(run_dir.load_results()) == [t.id for t in tasks]


def test_kill_between_commit_and_state_keeps_history_truthful(toy, server, tmp_path, monkeypatch):
    """Killed after v2 was committed but before state.json recorded iteration 1: the resumed run must not commit
    again, and its history must say iteration 1 was accepted as v2 (not 'not accepted')."""
    import nlgrad.optimize as optimize

    config = OptimizeConfig(benchmark="toy", iterations=2, batch=4, val=4, test_n=0)
    settings = toy_settings(tmp_path, server.api_base)
    real_write = optimize.write_json_atomic

    def killing_write(path, data, **kw):
        if Path(path).name == "state.json" and PolicyStore(tmp_path / "p").versions() == [1, 2]:
            raise KeyboardInterrupt("SIGKILL right after the commit")
        return real_write(path, data, **kw)

    monkeypatch.setattr(optimize, "write_json_atomic", killing_write)
    with pytest.raises(KeyboardInterrupt):
        run_optimize(config, settings, tmp_path / "p", progress=False)
    monkeypatch.setattr(optimize, "write_json_atomic", real_write)
    outcome = run_optimize(config, settings, tmp_path / "p", progress=False)
    assert PolicyStore(tmp_path / "p").versions() == [1, 2]  # no duplicate commit
    first = outcome.state.history[0]
    assert (first.iteration, first.accepted, first.version) == (1, True, 2), first


def test_resume_with_other_settings_is_refused_before_work(toy, server, tmp_path):
    settings = toy_settings(tmp_path, server.api_base)
    run_optimize(OptimizeConfig(benchmark="toy", iterations=2, batch=4, val=4, test_n=0), settings,
                 tmp_path / "p", progress=False, stop_after=1)
    before = server.stats.requests
    with pytest.raises(ConfigError, match="different settings"):
        run_optimize(OptimizeConfig(benchmark="toy", iterations=2, batch=5, val=4, test_n=0), settings,
                     tmp_path / "p", progress=False)
    assert server.stats.requests == before
