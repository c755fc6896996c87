"""How much the prefix-stable prompt layout saves on the local llama.cpp server.

Runs one TextWorldExpress episode with the default agent (LM cache off), then replays the exact sequence of agent
prompts twice against the same server: (a) as recorded (system + policy first, append-only history), and (b) with a
unique nonce at the start of every system message, which defeats the server's prefix reuse. Prints wall time per
call for both and the speed-up.

    .venv/bin/python scripts/bench_prefix_cache.py --benchmark twx/coin --seed-index 0 --step-cap 12
"""

from __future__ import annotations

import argparse
import time
import uuid

import nlgrad  # noqa: F401
from nlgrad.config import load_settings
from nlgrad.lm.client import LM
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.registry import load_benchmark, load_program


def replay(lm: LM, calls: list[list[dict]], *, nonce: bool) -> float:
    start = time.monotonic()
    for messages in calls:
        if nonce:
            messages = [{**messages[0], "content": f"[{uuid.uuid4().hex}]\n" + messages[0]["content"]}, *messages[1:]]
        lm.complete("agent", messages, max_tokens=6, stop=["\n"])
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--benchmark", default="twx/coin")
    parser.add_argument("--seed-index", type=int, default=0)
    parser.add_argument("--step-cap", type=int, default=12)
    args = parser.parse_args()
    settings = load_settings(use_cache=False)
    lm = LM(settings)
    bench = load_benchmark(args.benchmark)
    task = bench.tasks("dev", args.seed_index + 1)[args.seed_index]
    ex = Executor(benchmark=bench, program=load_program(bench.default_program, bench), lm=lm,
                  step_cap=args.step_cap, progress=False, keep_traces=True)
    result = ex.run([task])
    calls = [node["messages"] for node in result.traces[task.id].module_calls()]
    prompt_tokens = [node.get("prompt_tokens", 0) for node in result.traces[task.id].module_calls()]
    replay(lm, calls[:1], nonce=False)  # warm the server
    stable = replay(lm, calls, nonce=False)
    broken = replay(lm, calls, nonce=True)
    n = len(calls)
    print(f"benchmark {args.benchmark} task {task.id}: {n} agent calls, mean prompt {sum(prompt_tokens) / n:.0f} tokens")
    print(f"{'layout':<28}{'wall s':>10}{'s/call':>10}")
    print(f"{'prefix-stable (as run)':<28}{stable:>10.1f}{stable / n:>10.2f}")
    print(f"{'prefix broken (nonce)':<28}{broken:>10.1f}{broken / n:>10.2f}")
    print(f"speed-up from prefix reuse: {broken / stable:.2f}x")


if __name__ == "__main__":
    main()
