"""What the ``nlgrad`` commands share, wherever they are defined (:mod:`nlgrad.cli`, ``nlgrad compare`` in
:mod:`nlgrad.compare.cli`, ``nlgrad train`` in :mod:`nlgrad.trainer.cli`): the consoles, the error handler, the
common options, and the settings those options resolve to.

A command module imports from here, never from :mod:`nlgrad.cli` (which registers those modules' commands).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Optional

import click
import typer
from rich.console import Console

import nlgrad  # noqa: F401  (sets LITELLM_LOCAL_MODEL_COST_MAP before litellm is imported)
from nlgrad.config import load_settings
from nlgrad.errors import NlgradError
from nlgrad.interrupt import Interrupted, signals_stop_the_run
from nlgrad.terminal_text import message_line

out = Console()
err = Console(stderr=True)


def handles_errors(fn):
    """Turn nlgrad errors into one clear red line and exit code 2 (no traceback); the message is printed as text
    (no markup, no emoji codes; control and bidi characters escaped, see :mod:`nlgrad.terminal_text`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NlgradError as exc:
            err.print(message_line(exc), highlight=False)
            raise typer.Exit(2) from None

    return wrapper


def stops_cleanly(fn):
    """For a command that runs (eval, optimize, compare): SIGTERM and SIGINT stop it cleanly (see
    :mod:`nlgrad.interrupt`): what finished stays saved, the model servers it started are stopped, one line says what
    was kept and the command that resumes, and it exits with 128 + the signal's number (143, 130)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with signals_stop_the_run():
            try:
                return fn(*args, **kwargs)
            except KeyboardInterrupt as exc:
                stopped = Interrupted.of(exc)
                context = click.get_current_context(silent=True)
                command = [(context.find_root().info_name if context else None) or "nlgrad", *sys.argv[1:]]
                err.print(message_line(stopped.message(command), f"stopped by {stopped.signal_name}:", "yellow"),
                          highlight=False, soft_wrap=True)
                raise typer.Exit(128 + stopped.signum) from None

    return wrapper


def settings_from_options(config: Optional[Path], lm: Optional[str], critic_lm: Optional[str], no_cache: bool,
                          cache_dir: Optional[Path], runs_dir: Optional[Path]):
    """The settings of ``--config``, with ``--lm`` as the agent, ``--critic-lm`` as the critic and the cache and
    runs options applied."""
    settings = load_settings(config, cache_dir=cache_dir, runs_dir=runs_dir, use_cache=False if no_cache else None)
    settings = settings.with_role_model("agent", lm)
    settings = settings.with_role_model("critic", critic_lm)
    return settings


def benchmark_agent(settings, benchmark_id: str, lm: Optional[str]):
    """``--lm``, else the benchmark's own default agent (see :func:`nlgrad.installed_models.with_benchmark_agent`)."""
    from nlgrad.installed_models import with_benchmark_agent
    from nlgrad.runtime.registry import load_benchmark

    try:
        benchmark = load_benchmark(benchmark_id)
    except NlgradError:  # an unknown id is reported where the benchmark is used
        return settings
    settings, warnings = with_benchmark_agent(settings, benchmark, lm)
    for warning in warnings:
        err.print(message_line(warning, "warning:", "yellow"), highlight=False)
    return settings


def learning_settings_from_options(config: Optional[Path], lm: Optional[str], critic_lm: Optional[str],
                                   no_cache: bool, cache_dir: Optional[Path], runs_dir: Optional[Path]):
    """:func:`settings_from_options` for the commands that learn a policy (optimize, compare): ``--critic-lm`` also
    sets the optimizer role, and local models that are not available are swapped per
    :func:`~nlgrad.installed_models.with_available_local_models`, each swap printed as a warning."""
    from nlgrad.installed_models import learning_settings

    settings, warnings = learning_settings(settings_from_options(config, lm, None, no_cache, cache_dir, runs_dir),
                                           critic_lm)
    for warning in warnings:
        err.print(message_line(warning, "warning:", "yellow"), highlight=False)
    return settings


def validated(model, **values):
    """``model(**values)``; a validation error is shown as the flag that caused it."""
    from pydantic import ValidationError

    from nlgrad.errors import ConfigError

    try:
        return model(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first["loc"])
        raise ConfigError(first["msg"], field=f"--{field.replace('_', '-')}", value=first.get("input")) from None


ConfigOpt = typer.Option(None, "--config", help="TOML settings file (roles, cache, retries).")
LmOpt = typer.Option(None, "--lm", help="Agent model, any litellm string (default: local/qwen2.5-coder-0.5b).")
CriticOpt = typer.Option(None, "--critic-lm", help="Critic/optimizer model (default: local/qwen2.5-coder-1.5b).")
NoCacheOpt = typer.Option(False, "--no-cache", help="Do not read or write the LM reply cache.")
CacheDirOpt = typer.Option(None, "--cache-dir", help="LM reply cache directory.")
RunsDirOpt = typer.Option(None, "--runs-dir", help="Where run directories are written (default: runs/).")
ExecutorOpt = typer.Option("thread", "--executor",
                           help="Where episodes run: thread or ray (pip install 'nlgrad\\[ray]').")
RayAddressOpt = typer.Option(None, "--ray-address",
                             help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray instance).")
