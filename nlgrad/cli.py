"""The ``nlgrad`` command line. Each command parses options, calls one function and prints; no logic lives here.

Console script ``nlgrad``; from a checkout, ``python cli.py ...`` (the root launcher) runs the same app.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Optional

import typer

import nlgrad  # noqa: F401  (sets LITELLM_LOCAL_MODEL_COST_MAP before litellm is imported)
from nlgrad.cli_common import (CacheDirOpt, ConfigOpt, CriticOpt, ExecutorOpt, LmOpt, NoCacheOpt, RayAddressOpt,
                               RunsDirOpt, benchmark_agent, err, handles_errors, learning_settings_from_options, out,
                               settings_from_options, stops_cleanly, validated)

app = typer.Typer(help="nlgrad: language-space gradients for frozen LLM agents.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
local_app = typer.Typer(help="Manage the embedded local model servers.", no_args_is_help=True)
app.add_typer(local_app, name="local")

@app.command("eval")
@handles_errors
@stops_cleanly
def eval_cmd(
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="Benchmark id, e.g. twx/coin."),
    split: str = typer.Option("dev", "--split", help="train, dev or test."),
    n: int = typer.Option(20, "--n", help="Number of tasks (the first n of the split)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", help="Parallel worker threads (default: as many as the agent model serves at once: a local server's slots)."),
    program: Optional[str] = typer.Option(None, "--program", help="Agent program (default: the benchmark's)."),
    policy: Optional[str] = typer.Option(None, "--policy", help="Policy memory dir or file, or 'human'."),
    policy_version: Optional[int] = typer.Option(None, "--policy-version", help="Version in a policy dir."),
    policy_whole: bool = typer.Option(False, "--policy-whole", help="Show every policy entry to every call, "
                                      "ignoring entries' conditions (match patterns)."),
    policy_placement: str = typer.Option("system", "--policy-placement", help="Where a call's lessons go: system "
                                         "(the template's policy slot), input (just before the task input) or demos "
                                         "(example entries as prior user/assistant turns, the rest in the slot)."),
    examples_k: Optional[int] = typer.Option(None, "--examples-k", help="Show each call its K nearest example "
                                             "entries instead of the policy's own k (a policy of worked examples)."),
    step_cap: Optional[int] = typer.Option(None, "--step-cap", help="Max environment steps per task."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds allowed per task."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Write here (and resume a run written here)."),
    keep_errors: bool = typer.Option(False, "--keep-errors", help="On resume, keep saved error results instead of "
                                     "running those tasks again."),
    lm: Optional[str] = LmOpt, config: Optional[Path] = ConfigOpt, no_cache: bool = NoCacheOpt,
    cache_dir: Optional[Path] = CacheDirOpt, runs_dir: Optional[Path] = RunsDirOpt,
    executor: str = ExecutorOpt, ray_address: Optional[str] = RayAddressOpt,
):
    """Evaluate an agent program on a benchmark split and print the summary and LM usage."""
    from nlgrad.console import print_run
    from nlgrad.evaluate import EvalRequest, run_eval

    settings = benchmark_agent(settings_from_options(config, lm, None, no_cache, cache_dir, runs_dir), benchmark,
                               lm)
    request = EvalRequest(benchmark=benchmark, split=split, n=n, workers=workers, program=program,
                          policy=str(policy) if policy else None, policy_version=policy_version,
                          policy_whole=policy_whole, policy_placement=policy_placement, step_cap=step_cap,
                          timeout_s=timeout, examples_k=examples_k,
                          run_dir=str(run_dir) if run_dir else None, executor=executor, ray_address=ray_address,
                          retry_errors=not keep_errors)
    result, used_lm = run_eval(request, settings, console=err, progress=sys.stderr.isatty())
    print_run(out, result.summary, used_lm.ledger, str(result.run_dir.path) if result.run_dir else None,
              title=f"eval {benchmark} / {split}")


@app.command("optimize")
@handles_errors
@stops_cleanly
def optimize_cmd(
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="Benchmark id, e.g. twx/coin."),
    out_dir: Path = typer.Option(..., "--out", help="Policy directory to write (and resume), e.g. policies/coin."),
    method: str = typer.Option("nlpg", "--method", help="Optimization method."),
    method_option: list[str] = typer.Option(
        [], "--method-option", metavar="NAME=VALUE",
        help="An option of --method (repeatable), e.g. --method jerp --method-option k=3 --method-option gate=none. "
             "VALUE is JSON when it parses (3, 0.5, true, null, [\"a\"]), else a string; METHOD.NAME=VALUE (as in "
             "nlgrad compare) is accepted when METHOD is --method. Unknown names are an error that lists the "
             "method's options. Saved in OUT/run/config.json: a resume must pass the same ones."),
    iterations: Optional[int] = typer.Option(None, "--iterations", show_default=False,
                                             help="Optimization iterations (default 4; interactive: 2)."),
    batch: Optional[int] = typer.Option(None, "--batch", show_default=False,
                                        help="Train tasks rolled out per iteration (default 6; interactive: 3)."),
    val: Optional[int] = typer.Option(None, "--val", show_default=False,
                                      help="Dev tasks in the validation gate, paired (default 30; interactive: 3)."),
    test_n: Optional[int] = typer.Option(None, "--test-n", show_default=False,
                                         help="Test tasks in the final evaluation, 0 to skip "
                                              "(default 20; interactive: 6)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the minibatch sampler."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", help="Parallel worker threads (default: as many as the agent model serves at once: a local server's slots)."),
    program: Optional[str] = typer.Option(None, "--program", help="Agent program (default: the benchmark's)."),
    step_cap: Optional[int] = typer.Option(None, "--step-cap", show_default=False,
                                           help="Max environment steps per task (default: the "
                                                "benchmark's; interactive: 20)."),
    min_support: Optional[int] = typer.Option(None, "--min-support", show_default=False,
                                              help="Distinct traces a correction needs (nlpg, langmarl; default 2): "
                                                   "the same as --method-option min_support=N."),
    margin: float = typer.Option(0.02, "--margin", help="Gate: required mean paired improvement."),
    gate_min_wins: int = typer.Option(2, "--gate-min-wins",
                                      help="Gate: validation tasks the candidate must win (all, if fewer)."),
    gate_require_ci: Optional[bool] = typer.Option(
        None, "--gate-require-ci/--no-gate-require-ci",
        help="Gate: the 95% CI of the paired difference must exclude 0 (default: required from 30 validation tasks)."),
    gate_validation: str = typer.Option("first", "--gate-validation",
                                        help="Gate: 'first' scores every candidate on the first --val dev tasks; "
                                             "'reach' on the dev tasks whose prompt the candidate changes (at most "
                                             "--val), for conditional lessons."),
    init_policy: Optional[Path] = typer.Option(None, "--init-policy", help="Start from this policy."),
    budget_calls: Optional[int] = typer.Option(None, "--budget-calls", help="Stop after this many LM calls."),
    budget_tokens: Optional[int] = typer.Option(None, "--budget-tokens", help="Stop after this many tokens."),
    budget_usd: Optional[float] = typer.Option(None, "--budget-usd", help="Stop after this many dollars."),
    budget_time: Optional[str] = typer.Option(None, "--budget-time", help="Stop after this long, e.g. 30m."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print a cost estimate and exit."),
    lm: Optional[str] = LmOpt, critic_lm: Optional[str] = CriticOpt, config: Optional[Path] = ConfigOpt,
    no_cache: bool = NoCacheOpt, cache_dir: Optional[Path] = CacheDirOpt, runs_dir: Optional[Path] = RunsDirOpt,
    executor: str = ExecutorOpt, ray_address: Optional[str] = RayAddressOpt,
):
    """Learn a policy for a benchmark's program; resumable; ends with a test-split comparison.

    Defaults depend on the benchmark's kind. Static benchmarks: --iterations 4 --batch 6 --val 30 --test-n 20 and
    the benchmark's step cap. Interactive benchmarks (TextWorldExpress): --iterations 2 --batch 3 --val 3
    --test-n 6 --step-cap 20, so that a run with the local models finishes in about 30 minutes on 2 cores (a
    benchmark may refine these). A flag you pass always wins.
    """
    from nlgrad.console import print_optimize
    from nlgrad.methods.budget import Budget, parse_duration
    from nlgrad.methods.options import parse_method_options
    from nlgrad.optimize import resolve_config, run_optimize

    shorthand = [f"min_support={min_support}"] if min_support is not None else []  # an option of the method's
    options = parse_method_options(shorthand + method_option, method=method)  # bad ones fail before any model runs
    settings = benchmark_agent(learning_settings_from_options(config, lm, critic_lm, no_cache, cache_dir, runs_dir),
                               benchmark, lm)
    opt = validated(resolve_config, method=method, benchmark=benchmark, program=program, iterations=iterations,
                    batch=batch, val=val, test_n=test_n, seed=seed, workers=workers, step_cap=step_cap,
                    margin=margin, gate_min_wins=gate_min_wins,
                    gate_require_ci=gate_require_ci, gate_validation=gate_validation,
                    init_policy=str(init_policy) if init_policy else None, executor=executor, ray_address=ray_address, method_options=options)
    budget = Budget(calls=budget_calls, tokens=budget_tokens, usd=budget_usd, time_s=parse_duration(budget_time))
    outcome = run_optimize(opt, settings, out_dir, budget=budget, console=err, progress=sys.stderr.isatty(),
                           dry_run=dry_run)
    print_optimize(out, outcome, dry_run=dry_run)


@local_app.command("start")
@handles_errors
def local_start(model: str = typer.Argument("qwen2.5-coder-0.5b", help="Local model name (without local/).")):
    """Start a detached local model server (reused by later commands until `nlgrad local stop`)."""
    from nlgrad.lm.local_server import LocalServers

    info = LocalServers().ensure(model, detached=True)
    out.print(f"local/{info.name} serving at {info.api_base} with {info.backend}, {info.slots} slot(s) "
              f"(pid {info.pid}, log {info.log_path})")


@local_app.command("status")
@handles_errors
def local_status():
    """Show which local model servers are running."""
    from nlgrad.lm.local_models import BUILTIN_MODELS
    from nlgrad.lm.local_server import LocalServers

    servers = LocalServers()
    for name in sorted(BUILTIN_MODELS):
        info = servers.status(name)
        out.print(f"local/{name}: " + (f"running at {info.api_base} with {info.backend}, {info.slots} slot(s) "
                                       f"(pid {info.pid}, {info.owner})" if info else "not running"))


@local_app.command("stop")
@handles_errors
def local_stop(model: str = typer.Argument("qwen2.5-coder-0.5b")):
    """Stop a local model server."""
    from nlgrad.lm.local_server import LocalServers

    stopped = LocalServers().stop(model)
    out.print(f"local/{model}: " + ("stopped" if stopped else "was not running"))


from nlgrad.policy.cli import policy_app  # noqa: E402

app.add_typer(policy_app, name="policy")

# Commands that live with their feature package: each such module defines ``register(app)``.
for _module in ("nlgrad.compare.cli", "nlgrad.trainer.cli"):
    try:
        importlib.import_module(_module).register(app)
    except ModuleNotFoundError as _exc:  # the optional feature package is not installed / not present
        if _exc.name is None or not _module.startswith(_exc.name):
            raise


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
