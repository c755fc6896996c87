"""Toolkit overhead as a share of LM time for one eval, and the speed-up of an identical rerun served from cache.

Runs the same eval twice with a fresh, private LM cache: the first run calls the model for every step (cold), the
second is identical and is served from the cache. Prints both side by side:

- time in LM calls: summed around each ``litellm.completion`` call (the ledger's wall time; includes litellm's own
  client-side work and the model server's queue and compute);
- environment time: summed around ``env.reset`` / ``env.step`` (interactive benchmarks only);
- toolkit overhead: wall time minus both (prompt rendering, parsing, tracing, cache lookups, run-dir writes, ...),
  also as a share of LM time;
- speed-up of the rerun = cold wall / rerun wall.

With one worker the three parts add up to the wall time. Only measured numbers are printed.

    .venv/bin/python scripts/bench_overhead.py --benchmark twx/coin --n 2 --step-cap 2
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import nlgrad  # noqa: F401  (sets the offline litellm cost map before litellm is imported)
from nlgrad.config import load_settings
from nlgrad.lm.client import LM
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import step_cap_for
from nlgrad.runtime.registry import load_benchmark, load_program
from nlgrad.runtime.rundir import RunDir


class EnvClock:
    """Wraps a benchmark's ``make_env`` so every reset/step/close is timed (thread-safe total)."""

    def __init__(self, benchmark):
        self.total_s = 0.0
        self._lock = threading.Lock()
        if getattr(benchmark, "kind", "static") == "interactive":
            make = benchmark.make_env
            benchmark.make_env = lambda: _TimedEnv(make(), self)

    def add(self, seconds: float) -> None:
        with self._lock:
            self.total_s += seconds


class _TimedEnv:
    def __init__(self, env, clock: EnvClock):
        self._env, self._clock = env, clock

    def _timed(self, name, *args):
        start = time.perf_counter()
        try:
            return getattr(self._env, name)(*args)
        finally:
            self._clock.add(time.perf_counter() - start)

    def reset(self, task):
        return self._timed("reset", task)

    def step(self, action):
        return self._timed("step", action)

    def close(self):
        return self._timed("close")


def run_once(args, settings, run_dir: Path) -> dict:
    benchmark = load_benchmark(args.benchmark)
    program = load_program(args.program or benchmark.default_program, benchmark=benchmark)
    clock = EnvClock(benchmark)
    lm = LM(settings)
    tasks = benchmark.tasks(args.split, args.n)
    step_cap = step_cap_for(benchmark, args.step_cap)
    executor = Executor(benchmark=benchmark, program=program, lm=lm, workers=1, step_cap=step_cap,
                        run_dir=RunDir(run_dir).create(), progress=False)
    start = time.perf_counter()
    result = executor.run(tasks)
    wall = time.perf_counter() - start
    usage = lm.ledger.total()
    overhead = wall - usage.wall_s - clock.total_s
    return {"wall_s": wall, "lm_s": usage.wall_s, "env_s": clock.total_s, "overhead_s": overhead,
            "calls": usage.calls, "cached": usage.cached, "tokens": usage.total_tokens,
            "score": result.summary["score"]["mean"], "errors": result.summary["errors"], "n": len(tasks)}


def warm_up(settings) -> None:
    """Start (or find) a local model server before timing anything (its start-up is not toolkit overhead)."""
    lm = LM(settings.model_copy(update={"use_cache": False}))
    model = lm.model_for("agent")
    if model.startswith("local/"):
        lm.servers.ensure(model[len("local/"):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", default="twx/coin")
    parser.add_argument("--program", default=None)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--n", type=int, default=2)
    parser.add_argument("--step-cap", type=int, default=2)
    parser.add_argument("--lm", default=None, help="agent model (default: the settings' agent model)")
    parser.add_argument("--config", default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="nlgrad-bench-overhead-") as tmp:
        settings = load_settings(args.config, cache_dir=Path(tmp) / "cache", use_cache=True,
                                 runs_dir=Path(tmp) / "runs").with_role_model("agent", args.lm)
        warm_up(settings)
        cold = run_once(args, settings, Path(tmp) / "cold")
        warm = run_once(args, settings, Path(tmp) / "rerun")

    assert warm["calls"] == 0, "the rerun should have been served entirely from the cache"
    print(f"benchmark {args.benchmark} ({args.split}, n={cold['n']}, step cap {args.step_cap}), "
          f"agent {settings.role('agent').model}, 1 worker")
    rows = [
        ("wall time (s)", "wall_s", "{:.2f}"),
        ("LM calls / cache hits", None, None),
        ("tokens", "tokens", "{}"),
        ("time in LM calls (s)", "lm_s", "{:.2f}"),
        ("environment time (s)", "env_s", "{:.3f}"),
        ("toolkit overhead (s)", "overhead_s", "{:.3f}"),
        ("overhead / LM time", None, None),
        ("mean score", "score", "{:.3f}"),
        ("speed-up vs cold run", None, None),
    ]
    print(f"{'':28} {'cold run':>16} {'rerun (cache)':>16}")
    for label, key, fmt in rows:
        if label.startswith("LM calls"):
            cells = [f"{r['calls']} / {r['cached']}" for r in (cold, warm)]
        elif label.startswith("overhead /"):
            cells = [f"{100 * r['overhead_s'] / r['lm_s']:.2f}%" if r["lm_s"] else "n/a (no LM calls)"
                     for r in (cold, warm)]
        elif label.startswith("speed-up"):
            cells = ["1.00x", f"{cold['wall_s'] / warm['wall_s']:.1f}x"]
        else:
            cells = [fmt.format(r[key]) for r in (cold, warm)]
        print(f"{label:28} {cells[0]:>16} {cells[1]:>16}")
    if cold["errors"] or warm["errors"]:
        print(f"note: {cold['errors']} / {warm['errors']} tasks ended with an error")


if __name__ == "__main__":
    main()
