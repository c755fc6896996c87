"""What an agent program's structure scores on its own: the program runs with an agent that gives the same reply at
every step (litellm's ``mock_response``; no model), e.g. always list number ``1``.

A small agent's numbered replies are mostly a few list positions (see ``scripts/agent_reply_stats.py``), so this is
the part of a TWX/ScienceWorld score that the program's ranking, loop breaker and action filtering earn, and the
rest is what the model (and a policy) adds. Prints one line per reply.

    .venv/bin/python scripts/constant_agent.py --benchmark twx/cooking --n 20 --replies 1,14
"""

from __future__ import annotations

import argparse
import os
import tempfile

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402

from nlgrad.config import RoleConfig, Settings  # noqa: E402
from nlgrad.lm.client import LM  # noqa: E402
from nlgrad.runtime.executor import Executor  # noqa: E402
from nlgrad.runtime.protocols import step_cap_for  # noqa: E402
from nlgrad.runtime.registry import load_benchmark, load_program  # noqa: E402


def run_constant(benchmark_id: str, reply: str, n: int, split: str = "dev", program: str | None = None,
                 step_cap: int | None = None) -> dict:
    """Run ``program`` on the first ``n`` tasks of ``split`` with an agent that always replies ``reply``."""
    real = litellm.completion

    def constant(*args, **kwargs):
        kwargs["mock_response"] = reply
        return real(*args, **kwargs)

    bench = load_benchmark(benchmark_id)
    role = RoleConfig(model="openai/constant-agent", max_tokens=16)
    with tempfile.TemporaryDirectory() as cache:
        settings = Settings(roles={"agent": role, "critic": role}, cache_dir=cache, retries=0)
        litellm.completion = constant
        try:
            result = Executor(benchmark=bench, program=load_program(program or bench.default_program, bench),
                              lm=LM(settings), progress=False,
                              step_cap=step_cap_for(bench, step_cap)).run(
                bench.tasks(split, n))
        finally:
            litellm.completion = real
    scores = [r.score for r in result.results]
    return {"benchmark": benchmark_id, "reply": reply, "n": len(scores), "mean": sum(scores) / max(1, len(scores)),
            "wins": sum(r.success for r in result.results), "errors": sum(r.error is not None for r in result.results),
            "steps": sum(r.steps for r in result.results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--replies", default="1", help="comma-separated constant replies, one run each")
    parser.add_argument("--program", default=None)
    parser.add_argument("--step-cap", type=int, default=None)
    args = parser.parse_args()
    for reply in args.replies.split(","):
        row = run_constant(args.benchmark, reply, args.n, args.split, args.program, args.step_cap)
        print(f"{row['benchmark']} reply={row['reply']!r} n={row['n']} mean={row['mean']:.3f} wins={row['wins']} "
              f"errors={row['errors']} steps={row['steps']}")


if __name__ == "__main__":
    main()
