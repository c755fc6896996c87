"""The ``nlgrad`` command line. Each command parses options, calls one function and prints; no logic lives here.

Console script ``nlgrad``; from a checkout, ``python cli.py ...`` (the root launcher) runs the same app.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

import nlgrad  # noqa: F401  (sets LITELLM_LOCAL_MODEL_COST_MAP before litellm is imported)
from nlgrad.config import load_settings
from nlgrad.errors import NlgradError

app = typer.Typer(help="nlgrad: language-space gradients for frozen LLM agents.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
local_app = typer.Typer(help="Manage the embedded local model servers.", no_args_is_help=True)
app.add_typer(local_app, name="local")

out = Console()
err = Console(stderr=True)


def handles_errors(fn):
    """Turn nlgrad errors into one clear red line and exit code 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NlgradError as exc:
            err.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
            raise typer.Exit(2) from None

    return wrapper


def _settings(config: Optional[Path], lm: Optional[str], critic_lm: Optional[str], no_cache: bool,
              cache_dir: Optional[Path], runs_dir: Optional[Path]):
    settings = load_settings(config, cache_dir=cache_dir, runs_dir=runs_dir, use_cache=False if no_cache else None)
    settings = settings.with_role_model("agent", lm)
    settings = settings.with_role_model("critic", critic_lm)
    return settings


ConfigOpt = typer.Option(None, "--config", help="TOML settings file (roles, cache, retries).")
LmOpt = typer.Option(None, "--lm", help="Agent model, any litellm string (default: local/qwen2.5-coder-0.5b).")
CriticOpt = typer.Option(None, "--critic-lm", help="Critic/optimizer model (default: local/qwen2.5-coder-1.5b).")
NoCacheOpt = typer.Option(False, "--no-cache", help="Do not read or write the LM reply cache.")
CacheDirOpt = typer.Option(None, "--cache-dir", help="LM reply cache directory.")
RunsDirOpt = typer.Option(None, "--runs-dir", help="Where run directories are written (default: runs/).")


@app.command("eval")
@handles_errors
def eval_cmd(
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="Benchmark id, e.g. twx/coin."),
    split: str = typer.Option("dev", "--split", help="train, dev or test."),
    n: int = typer.Option(20, "--n", help="Number of tasks (the first n of the split)."),
    workers: int = typer.Option(1, "--workers", "-w", help="Parallel worker threads."),
    program: Optional[str] = typer.Option(None, "--program", help="Agent program (default: the benchmark's)."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="Policy memory directory or file."),
    policy_version: Optional[int] = typer.Option(None, "--policy-version", help="Version in a policy dir."),
    step_cap: Optional[int] = typer.Option(None, "--step-cap", help="Max environment steps per task."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds allowed per task."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Write here (and resume a run written here)."),
    lm: Optional[str] = LmOpt, config: Optional[Path] = ConfigOpt, no_cache: bool = NoCacheOpt,
    cache_dir: Optional[Path] = CacheDirOpt, runs_dir: Optional[Path] = RunsDirOpt,
):
    """Evaluate an agent program on a benchmark split and print the summary and LM usage."""
    from nlgrad.console import print_run
    from nlgrad.evaluate import EvalRequest, run_eval

    settings = _settings(config, lm, None, no_cache, cache_dir, runs_dir)
    request = EvalRequest(benchmark=benchmark, split=split, n=n, workers=workers, program=program,
                          policy=str(policy) if policy else None, policy_version=policy_version,
                          step_cap=step_cap, timeout_s=timeout, run_dir=str(run_dir) if run_dir else None)
    result, used_lm = run_eval(request, settings, console=err, progress=sys.stderr.isatty())
    print_run(out, result.summary, used_lm.ledger, str(result.run_dir.path) if result.run_dir else None,
              title=f"eval {benchmark} / {split}")


@local_app.command("start")
@handles_errors
def local_start(model: str = typer.Argument("qwen2.5-coder-0.5b", help="Local model name (without local/).")):
    """Start a detached local model server (reused by later commands until `nlgrad local stop`)."""
    from nlgrad.lm.local_server import LocalServers

    info = LocalServers().ensure(model, detached=True)
    out.print(f"local/{info.name} serving at {info.api_base} (pid {info.pid}, log {info.log_path})")


@local_app.command("status")
@handles_errors
def local_status():
    """Show which local model servers are running."""
    from nlgrad.lm.local_models import BUILTIN_MODELS
    from nlgrad.lm.local_server import LocalServers

    servers = LocalServers()
    for name in sorted(BUILTIN_MODELS):
        info = servers.status(name)
        out.print(f"local/{name}: " + (f"running at {info.api_base} (pid {info.pid}, {info.owner})" if info
                                       else "not running"))


@local_app.command("stop")
@handles_errors
def local_stop(model: str = typer.Argument("qwen2.5-coder-0.5b")):
    """Stop a local model server."""
    from nlgrad.lm.local_server import LocalServers

    stopped = LocalServers().stop(model)
    out.print(f"local/{model}: " + ("stopped" if stopped else "was not running"))


try:  # the policy commands live with the policy package
    from nlgrad.policy.cli import policy_app

    app.add_typer(policy_app, name="policy")
except ImportError:  # pragma: no cover - only while the policy package is incomplete
    pass


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
