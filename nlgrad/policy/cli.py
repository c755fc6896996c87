"""``nlgrad policy ...``: show, log, diff, render and apply policy memory (a typer sub-app, ``policy_app``)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from nlgrad.errors import NlgradError
from nlgrad.policy.blocks import apply_block
from nlgrad.policy.deploy import write_prompt_file
from nlgrad.policy.diff import diff_files, diff_markup, diff_versions
from nlgrad.policy.errors import PolicyFileError
from nlgrad.policy.store import load_policy
from nlgrad.policy.render_formats import render_json, render_markdown, render_text_all
from nlgrad.policy.show import show_log, show_memory
from nlgrad.policy.store import PolicyStore
from nlgrad.terminal_text import escape_controls, escaped_copy, message_line

policy_app = typer.Typer(
    name="policy",
    help="Inspect, diff, render and deploy policy memory (versioned route-local corrections).",
    no_args_is_help=True,
    add_completion=False,
)


class RenderFormat(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


class DiffFormat(str, Enum):
    text = "text"
    json = "json"


def _fail(exc: Exception, code: int = 2) -> typer.Exit:
    _stderr().print(message_line(exc, style="red"), soft_wrap=True)
    return typer.Exit(code)


def _stdout() -> Console:
    """Policy text on stdout: markup only where the code writes it (values are escaped), no emoji codes."""
    return Console(highlight=False, emoji=False)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, emoji=False)


PathArg = typer.Argument(..., help="a policy directory (policies/...) or a single policy file (.json/.yaml)")
VersionOpt = typer.Option(None, "--version", "-v", help="version number in a policy directory (default: latest)")


@policy_app.command()
def show(path: Path = PathArg, version: Optional[int] = VersionOpt,
         route: Optional[str] = typer.Option(None, "--route", "-r", help="show only this route")) -> None:
    """Show a policy version: entries per route with counters and provenance."""
    try:
        memory = load_policy(path, version=version)
        show_memory(_stdout(), escaped_copy(memory), route)  # bidi / control characters shown as escapes
    except NlgradError as exc:
        raise _fail(exc) from None


@policy_app.command()
def log(directory: Path = typer.Argument(..., help="a policy directory")) -> None:
    """List versions with parent, method, number of operations and scores at acceptance."""
    try:
        if not directory.is_dir():
            raise PolicyFileError("not a policy directory", path=directory, field="<dir>", value=str(directory))
        show_log(_stdout(), PolicyStore(directory))
    except NlgradError as exc:
        raise _fail(exc) from None


@policy_app.command()
def diff(first: str = typer.Argument(..., help="a policy directory, or the old policy file"),
         second: str = typer.Argument(..., help="old version number (with a directory), or the new policy file"),
         third: Optional[str] = typer.Argument(None, help="new version number (default with a directory: latest)"),
         fmt: DiffFormat = typer.Option(DiffFormat.text, "--format", "-f", help="text (highlighted) or json")) -> None:
    """Diff two versions (DIR A B; DIR A = A vs latest) or two policy files (FILE_A FILE_B)."""
    try:
        if third is None and Path(first).is_dir() and second.isdigit():
            third = str(PolicyStore(first).latest())
        if third is not None:
            try:
                old_v, new_v = int(second), int(third)
            except ValueError:
                raise PolicyFileError("with a directory, A and B are version numbers", path=first,
                                      field="version", value=f"{second} {third}") from None
            result = diff_versions(first, old_v, new_v)
        else:
            result = diff_files(first, second)
    except NlgradError as exc:
        raise _fail(exc) from None
    if fmt is DiffFormat.json:
        typer.echo(result.to_json(), nl=False)
    else:
        _stdout().print(diff_markup(result), soft_wrap=True)


@policy_app.command()
def render(path: Path = PathArg, route: Optional[str] = typer.Option(None, "--route", "-r", help="one route"),
           fmt: RenderFormat = typer.Option(RenderFormat.text, "--format", "-f", help="text, markdown or json"),
           version: Optional[int] = VersionOpt,
           for_input: Optional[str] = typer.Option(None, "--for-input", help="the text of one request: print only "
                                                   "the entries that concern it (conditional entries whose match "
                                                   "patterns it matches, and every unconditional one)")) -> None:
    """Print the exact text a module gets for a route (or every route, each under a [route] header)."""
    try:
        memory = load_policy(path, version=version)
    except NlgradError as exc:
        raise _fail(exc) from None
    if for_input is not None:
        if route is None:
            raise _fail(PolicyFileError("--for-input needs --route: conditions are per route", path=path,
                                        field="--route", value=None)) from None
        if fmt is not RenderFormat.text:
            raise _fail(PolicyFileError("--for-input prints text only", path=path, field="--format",
                                        value=fmt.value)) from None
        text = memory.render(route, for_input=for_input)
        if text:
            typer.echo(text)
        return
    if fmt is RenderFormat.json:
        typer.echo(render_json(memory, route), nl=False)
    elif fmt is RenderFormat.markdown:
        typer.echo(render_markdown(memory, route), nl=False)
    else:
        text = memory.render(route) if route is not None else render_text_all(memory)
        if text:
            typer.echo(text)


@policy_app.command()
def apply(path: Path = PathArg,
          route: str = typer.Option(..., "--route", "-r", help="the route whose policy goes into the prompt"),
          prompt_file: Path = typer.Option(..., "--prompt-file", "-p", help="an existing deployed prompt file"),
          check: bool = typer.Option(False, "--check", help="change nothing; exit 1 if the file is out of date"),
          version: Optional[int] = VersionOpt) -> None:
    """Insert or replace the delimited policy block of ROUTE in a prompt file (idempotent)."""
    err = _stderr()
    try:
        memory = load_policy(path, version=version)
        try:
            raw = prompt_file.read_bytes()
        except OSError as exc:
            raise PolicyFileError(f"cannot read the prompt file: {exc.strerror or exc}", path=prompt_file,
                                  field="<file>", value=str(prompt_file)) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PolicyFileError(f"the prompt file is not UTF-8: {exc.reason}", path=prompt_file,
                                  field=f"byte {exc.start}", value=raw[max(0, exc.start - 10):exc.start + 10]) from None
        if route not in memory.routes():
            known = ", ".join(memory.routes()) or "none"
            err.print(message_line(f"route {route!r} has no entries in this policy (routes: {known})", "warning:",
                                   "yellow"))
        updated = apply_block(text, route, memory.render(route), memory.version, source=prompt_file)
    except NlgradError as exc:
        raise _fail(exc) from None
    if check:
        if updated != text:
            err.print(escape_controls(f"{prompt_file}: policy block for {route} is out of date (policy "
                                      f"v{memory.version})"), markup=False)
            raise typer.Exit(1)
        typer.echo(f"{prompt_file}: up to date (policy v{memory.version}, route {route})")
        return
    if updated == text:
        typer.echo(f"{prompt_file}: already up to date (policy v{memory.version}, route {route})")
        return
    try:
        target = write_prompt_file(prompt_file, updated)
    except NlgradError as exc:
        raise _fail(exc) from None
    via = f" (through the link to {target})" if prompt_file.is_symlink() else ""
    typer.echo(f"{prompt_file}: applied policy v{memory.version} for route {route}{via}")
