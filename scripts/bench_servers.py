"""Old server against new: ``llama_cpp.server`` (python) and ``llama-server``, on four workloads, one after another.

    .venv/bin/python scripts/bench_servers.py --replay benchmarks/results/replay/nlpg-hotpotqa/iter-0001 \
        --out benchmarks/results/servers.json

Workloads (0.5B agent unless said):
  a  eval twx/coin dev n=10            b  eval hotpotqa dev n=20
  c  eval ifeval dev n=20, 1.5B agent  d  one NLPG iteration's critic + optimizer calls (1.5B), replayed from the
                                          rollouts saved under ``--replay`` (an ``iter-NNNN`` folder of an optimize run)
Every (server, workload) starts its model servers fresh, uses a private empty LM cache, runs the workload with as
many workers as the server has slots (1 for the Python server), reads the servers' peak RSS (VmHWM) and stops them.
Then the same workload is rerun on the same cache: every call must be a cache hit (LM calls 0).

Printed per row: tasks/s, prompt and completion tokens/s, p50/p95 latency of one LM call, peak RSS per model server,
the servers' CPU time (user + system: the work they did, which other jobs on the machine change less than the wall
time) and the 1-minute load average at the end,
the share of wall time with no LM call in flight (the toolkit's own time, environment steps included), and the cached
rerun's speed-up and LM call count. Then the speed-up of llama-server over the Python server per workload, and how
many tasks (d: proposals) came out identical at temperature 0 on both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import nlgrad  # noqa: F401  (sets the offline litellm cost map before litellm is imported)
from nlgrad.config import RoleConfig, Settings
from nlgrad.lm.client import LM
from nlgrad.lm.local_server import LocalServers
from nlgrad.lm.server_backends import select_backend
from nlgrad.runtime.executor import Executor, TaskResult
from nlgrad.runtime.protocols import step_cap_for
from nlgrad.runtime.registry import load_benchmark, load_program

SMALL, LARGE = "local/qwen2.5-coder-0.5b", "local/qwen2.5-coder-1.5b"
WORKLOADS = {
    "a": {"label": "eval twx/coin dev n=10", "benchmark": "twx/coin", "n": 10, "agent": SMALL},
    "b": {"label": "eval hotpotqa dev n=20", "benchmark": "hotpotqa", "n": 20, "agent": SMALL},
    "c": {"label": "eval ifeval dev n=20 (1.5B agent)", "benchmark": "ifeval", "n": 20, "agent": LARGE},
    "d": {"label": "NLPG critic+optimizer replay (1.5B)", "replay": True},
}


class CallClock:
    """Records (start, end) of every LM call that reached a server (cache hits excluded)."""

    def __init__(self):
        self.intervals: list[tuple[float, float]] = []
        self._lock = threading.Lock()

    def install(self, lm: LM) -> None:
        original = lm._call_once

        def timed(*args, **kwargs):
            start = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                with self._lock:
                    self.intervals.append((start, time.monotonic()))

        lm._call_once = timed

    def busy_s(self) -> float:
        """Wall time with at least one call in flight (union of the intervals)."""
        total, end = 0.0, float("-inf")
        for s, e in sorted(self.intervals):
            if s > end:
                total += e - s
                end = e
            elif e > end:
                total += e - end
                end = e
        return total

    def latencies(self) -> list[float]:
        return sorted(e - s for s, e in self.intervals)


def settings_for(agent: str, cache_dir: Path, runs_dir: Path) -> Settings:
    return Settings(roles={"agent": RoleConfig(model=agent), "critic": RoleConfig(model=LARGE, max_tokens=512),
                           "optimizer": RoleConfig(model=LARGE, max_tokens=512)},
                    cache_dir=cache_dir, runs_dir=runs_dir)


def run_eval(spec: dict[str, Any], lm: LM) -> tuple[list[TaskResult], dict[str, Any]]:
    bench = load_benchmark(spec["benchmark"])
    program = load_program(bench.default_program, bench)
    result = Executor(benchmark=bench, program=program, lm=lm, progress=False,
                      step_cap=step_cap_for(bench, None)).run(bench.tasks("dev", spec["n"]))
    outputs = {r.task_id: {"score": r.score, "output": r.output, "error": r.error} for r in result.results}
    return result.results, outputs


def run_replay(replay: Path, lm: LM) -> tuple[list[Any], dict[str, Any]]:
    from nlgrad.runtime.module import route_instructions
    from nlgrad.methods.nlpg import NLPG
    from nlgrad.policy import PolicyMemory
    from nlgrad.runtime.trace import Trace

    config = json.loads((replay.parent / "config.json").read_text())
    bench = load_benchmark(config["benchmark"])
    program = load_program(config.get("program") or bench.default_program, bench)
    rollouts = replay / "rollouts"
    results = [TaskResult(**json.loads(line)) for line in (rollouts / "results.jsonl").read_text().splitlines()
               if line.strip()]
    traces = {p.stem: Trace.load(p) for p in (rollouts / "traces").glob("*.json")}
    traces = {t.task_id: t for t in traces.values()}
    options = {**config, **config.get("method_options", {})}  # runs before NLPG's options moved kept them at the top
    nlpg = NLPG()
    _, records, _ = nlpg.critique(lm, results, traces, max_diagnose=options.get("max_diagnose", 6),
                                  contrast=options.get("contrast_successes", 1))
    instructions = {route: route_instructions(program, route) for route in program.routes}
    candidates, _ = nlpg.propose_corrections(lm, records, PolicyMemory(program=program.name), instructions, {})
    outputs = {"feedback": sorted(r.feedback for r in records), "proposals": sorted(c.text for c in candidates)}
    return records, outputs


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (its threads included) from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(server: str, key: str, replay: Path | None, scratch: Path) -> dict[str, Any]:
    spec = WORKLOADS[key]
    program, _, variant = server.partition("+")  # "llama-server+draft": the 0.5B drafts for the other models
    os.environ["NLGRAD_LOCAL_SERVER"] = program
    if variant == "draft":
        os.environ["NLGRAD_LOCAL_DRAFT"] = SMALL[len("local/"):]
    else:
        os.environ.pop("NLGRAD_LOCAL_DRAFT", None)
    backend = select_backend(program)
    cache_dir = scratch / f"cache-{server}-{key}"
    agent = spec.get("agent", SMALL)
    row: dict[str, Any] = {"server": server, "workload": key, "label": spec["label"]}

    def one_run(cached: bool):
        lm = LM(settings_for(agent, cache_dir, scratch / "runs"), servers=LocalServers(backend=backend))
        clock = CallClock()
        clock.install(lm)
        cpu0 = {}
        if not cached:  # servers up before the clock starts: start-up is not throughput
            for model in ({agent} if not spec.get("replay") else {LARGE}):
                info = lm.servers.ensure(model[len("local/"):])
                cpu0[info.pid] = cpu_seconds(info.pid)
        lm.server_cpu_start = cpu0
        start = time.monotonic()
        items, outputs = run_replay(replay, lm) if spec.get("replay") else run_eval(spec, lm)
        wall = time.monotonic() - start
        return lm, clock, items, outputs, wall

    lm, clock, items, outputs, wall = one_run(cached=False)
    total = lm.ledger.total()
    lat = clock.latencies()
    rss = {name: round(peak_rss_mb(info.pid), 1) for name, info in LocalServers._started_here.items()}
    server_cpu = sum(cpu_seconds(info.pid) - lm.server_cpu_start.get(info.pid, 0.0)
                     for info in LocalServers._started_here.values())
    for name in list(LocalServers._started_here):
        LocalServers().stop(name)
    row.update(
        n=len(items), wall_s=round(wall, 1), tasks_per_s=round(len(items) / wall, 4),
        lm_calls=total.calls, prompt_tokens=total.prompt_tokens, completion_tokens=total.completion_tokens,
        prompt_tok_per_s=round(total.prompt_tokens / wall, 1),
        completion_tok_per_s=round(total.completion_tokens / wall, 2),
        p50_call_s=round(statistics.median(lat), 2) if lat else None,
        p95_call_s=round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 2) if lat else None,
        peak_rss_mb=rss, outside_lm_share=round(1 - clock.busy_s() / wall, 4) if wall else None,
        server_cpu_s=round(server_cpu, 1), server_cpu_s_per_task=round(server_cpu / len(items), 2) if items else None,
        load_avg_1m=round(os.getloadavg()[0], 2),
        workers=lm.parallelism("agent") if not spec.get("replay") else lm.parallelism("critic"),
    )
    lm2, _, _, _, wall2 = one_run(cached=True)
    rerun = lm2.ledger.total()
    row.update(cached_rerun_wall_s=round(wall2, 3), cached_rerun_lm_calls=rerun.calls,
               cached_speedup=round(wall / wall2, 1) if wall2 else None)
    for name in list(LocalServers._started_here):
        LocalServers().stop(name)
    row["outputs"] = outputs
    return row


def same_outputs(a: dict[str, Any], b: dict[str, Any]) -> tuple[int, int]:
    keys = sorted(set(a) | set(b))
    return sum(a.get(k) == b.get(k) for k in keys), len(keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="python,llama-server",
                        help="python, llama-server, llama-server+draft (the 0.5B model drafts tokens for the 1.5B)")
    parser.add_argument("--workloads", default="a,b,c,d")
    parser.add_argument("--replay", type=Path, help="an iter-NNNN folder of an optimize run (workload d)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/servers.json"))
    args = parser.parse_args()
    keys = [k.strip() for k in args.workloads.split(",") if k.strip()]
    if "d" in keys and args.replay is None:
        parser.error("workload d needs --replay DIR")
    rows: list[dict[str, Any]] = json.loads(args.out.read_text()) if args.out.exists() else []
    done = {(r["server"], r["workload"]) for r in rows}
    with tempfile.TemporaryDirectory(prefix="nlgrad-bench-servers-") as tmp:
        for key in keys:  # one workload on both servers back to back, so the pair sees the same machine
            for server in [s.strip() for s in args.servers.split(",") if s.strip()]:
                if (server, key) in done:
                    continue
                print(f"[bench] {server} / {WORKLOADS[key]['label']} ...", file=sys.stderr, flush=True)
                rows.append(measure(server, key, args.replay, Path(tmp)))
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(rows, indent=1))  # resumable: finished rows are kept
    print_table(rows)


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = ["server", "workload", "n", "wall_s", "server_cpu_s", "load_avg_1m", "tasks_per_s", "prompt_tok_per_s",
            "completion_tok_per_s",
            "p50_call_s", "p95_call_s", "peak_rss_mb", "outside_lm_share", "cached_speedup", "cached_rerun_lm_calls"]
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r.get(c)) for c in cols))
    by = {(r["server"], r["workload"]): r for r in rows}
    for key in WORKLOADS:
        for label in ("llama-server", "llama-server+draft"):
            old, new = by.get(("python", key)), by.get((label, key))
            if not (old and new):
                continue
            same, total = same_outputs(old["outputs"], new["outputs"])
            print(f"{key} ({WORKLOADS[key]['label']}): {label} speed-up {old['wall_s'] / new['wall_s']:.2f}x "
                  f"in wall time, {old['server_cpu_s'] / new['server_cpu_s']:.2f}x in server CPU time; "
                  f"identical at temperature 0: {same}/{total}")
        plain, draft = by.get(("llama-server", key)), by.get(("llama-server+draft", key))
        if plain and draft:  # the draft model's own gain, both rows from one run on one machine
            same, total = same_outputs(plain["outputs"], draft["outputs"])
            print(f"{key} ({WORKLOADS[key]['label']}): draft model speed-up {plain['wall_s'] / draft['wall_s']:.2f}x "
                  f"in wall time, {plain['server_cpu_s'] / draft['server_cpu_s']:.2f}x in server CPU time; "
                  f"identical at temperature 0: {same}/{total}")


if __name__ == "__main__":
    main()
