"""Scaling on this machine: episodes/s for 1, 2, 4 workers against the local model server, and the share of episode
time spent outside LM calls, for the thread executor and (``--executors thread,ray``) the Ray executor.

Every configuration runs the same tasks with the LM cache off, so each one really calls the model. Per configuration:

- episodes/s = tasks / wall time of ``executor.run`` (Ray start-up and worker imports are excluded: a warm-up runs
  first; a local model server is started before timing);
- LM share = time inside module calls (``ctx.call``: waiting for a free model slot + the litellm call) summed over
  episodes / summed episode time; outside-LM share = 1 - that (environment steps, rendering, parsing, tracing);
- model busy = the ledger's time inside litellm calls / wall time (about 1.0 means the one-slot server is the
  bottleneck and more workers cannot help).

    .venv/bin/python scripts/bench_scaling.py --benchmark twx/coin --n 3 --step-cap 1 --workers 1,2,4
"""

from __future__ import annotations

import argparse
import time

import nlgrad  # noqa: F401  (sets the offline litellm cost map before litellm is imported)
from nlgrad.config import load_settings
from nlgrad.lm.client import LM
from nlgrad.runtime.protocols import step_cap_for
from nlgrad.runtime.ray_executor import make_executor
from nlgrad.runtime.registry import load_benchmark, load_program


def warm_ray(workers: int) -> float:
    """Start the local Ray instance and make ``workers`` worker processes import nlgrad; returns seconds taken."""
    from nlgrad.runtime.ray_executor import ensure_ray, import_ray

    ray = import_ray()
    start = time.perf_counter()
    ensure_ray(None, num_cpus=workers)

    @ray.remote(num_cpus=1)
    def _imports() -> int:
        import os

        import nlgrad.runtime.ray_executor  # noqa: F401
        from nlgrad.runtime.registry import load_benchmark as _lb  # noqa: F401

        time.sleep(0.5)  # keep the worker busy so each warm-up task lands on a different worker process
        return os.getpid()

    ray.get([_imports.remote() for _ in range(workers)])
    return time.perf_counter() - start


def measure(args, settings, kind: str, workers: int) -> dict:
    benchmark = load_benchmark(args.benchmark)
    program = load_program(args.program or benchmark.default_program, benchmark=benchmark)
    lm = LM(settings)
    tasks = benchmark.tasks(args.split, args.n)
    executor = make_executor(kind, benchmark=benchmark, program=program, lm=lm, workers=workers,
                             step_cap=step_cap_for(benchmark, args.step_cap),
                             progress=False, keep_traces=True)
    start = time.perf_counter()
    result = executor.run(tasks)
    wall = time.perf_counter() - start
    episode_s = sum(r.latency_s for r in result.results)
    in_lm_s = sum(float(node.get("latency_s", 0.0)) for trace in result.traces.values()
                  for node in trace.module_calls())
    usage = lm.ledger.total()
    return {"kind": kind, "workers": workers, "n": len(tasks), "wall_s": wall, "eps": len(tasks) / wall,
            "lm_share": in_lm_s / episode_s if episode_s else 0.0, "busy": usage.wall_s / wall,
            "calls": usage.calls, "errors": result.summary["errors"], "score": result.summary["score"]["mean"],
            "steps": result.summary["mean_steps"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", default="twx/coin")
    parser.add_argument("--program", default=None)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--n", type=int, default=3, help="tasks per configuration")
    parser.add_argument("--step-cap", type=int, default=1)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--executors", default="thread", help="comma-separated: thread, ray")
    parser.add_argument("--lm", default=None)
    parser.add_argument("--config", default=None)
    args = parser.parse_args()

    settings = load_settings(args.config, use_cache=False).with_role_model("agent", args.lm)
    model = settings.role("agent").model
    if model.startswith("local/"):
        LM(settings).servers.ensure(model[len("local/"):])
    worker_counts = [int(w) for w in args.workers.split(",")]
    rows, notes = [], []
    for kind in [k.strip() for k in args.executors.split(",") if k.strip()]:
        if kind == "ray":
            notes.append(f"ray: local instance start + worker imports took {warm_ray(max(worker_counts)):.1f}s "
                         "(not included below)")
        for workers in worker_counts:
            rows.append(measure(args, settings, kind, workers))
            r = rows[-1]
            print(f"  done: {kind} x{workers}: {r['wall_s']:.1f}s", flush=True)

    print(f"\nbenchmark {args.benchmark} ({args.split}, n={args.n} per row, step cap {args.step_cap}), agent {model}, "
          "LM cache off")
    header = (f"{'executor':>8} {'workers':>7} {'LM calls':>8} {'wall s':>8} {'episodes/s':>10} {'speed-up':>8} "
              f"{'LM share':>8} {'outside LM':>10} {'model busy':>10}")
    print(header)
    base = {r["kind"]: r["eps"] for r in rows if r["workers"] == worker_counts[0]}
    for r in rows:
        print(f"{r['kind']:>8} {r['workers']:>7} {r['calls']:>8} {r['wall_s']:>8.1f} {r['eps']:>10.4f} "
              f"{r['eps'] / base[r['kind']]:>7.2f}x {100 * r['lm_share']:>7.1f}% {100 * (1 - r['lm_share']):>9.1f}% "
              f"{100 * r['busy']:>9.1f}%")
    errors = sum(r["errors"] for r in rows)
    for note in notes + ([f"{errors} episodes ended with an error"] if errors else []):
        print("note:", note)


if __name__ == "__main__":
    main()
