"""Rich renderings for humans: a policy version with counters and provenance, and the version log."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from nlgrad.policy.memory import PolicyMemory
from nlgrad.policy.render import ordered_active
from nlgrad.policy.schema import PolicyEntry
from nlgrad.policy.store import PolicyStore


def _scores(scores: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:.4g}" for k, v in sorted(scores.items())) or "-"


def _provenance(entry: PolicyEntry) -> str:
    p = entry.provenance
    parts = [p.source]
    if p.iteration is not None:
        parts.append(f"iter {p.iteration}")
    if p.revised_iteration is not None:
        parts.append(f"rev {p.revised_iteration}")
    if p.trace_ids:
        shown = ", ".join(p.trace_ids[:3]) + (f" +{len(p.trace_ids) - 3}" if len(p.trace_ids) > 3 else "")
        parts.append(f"traces: {shown}")
    if p.reason:
        parts.append(f"why: {p.reason}")
    return "; ".join(parts)


def _header(memory: PolicyMemory) -> Panel:
    created = memory.created.isoformat() if memory.created else "-"
    lines = [
        f"[bold]program[/bold] {escape(memory.program)}   [bold]benchmark[/bold] {escape(memory.benchmark or '-')}",
        f"[bold]version[/bold] {memory.version}   [bold]parent[/bold] {memory.parent if memory.parent is not None else '-'}"
        f"   [bold]method[/bold] {escape(memory.method)}   [bold]created[/bold] {created}",
        f"[bold]scores[/bold] {escape(_scores(memory.scores))}   [bold]ops[/bold] {memory.n_ops}",
    ]
    if memory.selection is not None:
        sel = memory.selection
        how = {"retrieval": f"retrieval: the top {sel.k or 4} entries per call by {sel.embedder} embeddings + "
                            f"{sel.utility_weight} x utility",
               "examples": f"examples: the {sel.k or 8} examples nearest each call's input ({sel.embedder} "
                           f"embeddings), shown as {'prior turns' if sel.examples_as == 'turns' else 'lines'}"
               }.get(sel.kind, f"patterns{f', at most {sel.k} conditional entries per call' if sel.k else ''}")
        lines.append(f"[bold]selection[/bold] {escape(how)}")
    if memory.note:
        lines.append(f"[bold]note[/bold] {escape(memory.note)}")
    return Panel("\n".join(lines), title="policy memory", expand=False)


def route_table(memory: PolicyMemory, route: str) -> Table:
    table = Table(title=f"{route}  ({memory.tokens(route)} tokens)", title_justify="left", show_lines=False)
    table.add_column("id", no_wrap=True)
    table.add_column("entry", overflow="fold", ratio=3)
    table.add_column("+/-", justify="right", no_wrap=True)
    table.add_column("sup", justify="right", no_wrap=True)
    table.add_column("provenance", overflow="fold", ratio=1)
    active = ordered_active(memory.entries(route))
    inactive = [e for e in memory.entries(route) if not e.active]
    for entry in active + inactive:
        text = Text()
        if entry.when:
            text.append("when ", style="dim")
            text.append(entry.when, style="italic")
            text.append(": ", style="dim")
        text.append(entry.text, style=None if entry.active else "dim strike")
        if entry.match:
            text.append(" [shown only for inputs matching: " + " | ".join(entry.match) + "]", style="magenta")
        if entry.kind.value != "correction":
            text.append(f" [{entry.kind.value}]", style="cyan")
        if not entry.active:
            text.append(f" ({entry.status.value})", style="dim")
        table.add_row(entry.id or "", text, f"+{entry.helpful}/-{entry.harmful}", str(entry.support),
                      Text(_provenance(entry)))  # Text: a reason an LM wrote is shown literally, never as markup
    return table


def show_memory(console: Console, memory: PolicyMemory, route: str | None = None) -> None:
    console.print(_header(memory))
    routes = [route] if route is not None else memory.routes()
    if not routes:
        console.print("(no routes)")
    for name in routes:
        if not memory.entries(name):
            console.print(f"{escape(name)}: (no entries)")
            continue
        console.print(route_table(memory, name))


def show_log(console: Console, store: PolicyStore) -> None:
    manifest = store.manifest()
    table = Table(title=f"{store.dir}  program={manifest.program or '-'}  benchmark={manifest.benchmark or '-'}",
                  title_justify="left")
    for column in ("ver", "from", "created", "method", "ops", "entries"):
        table.add_column(column, no_wrap=True)
    table.add_column("scores", overflow="fold", min_width=10)
    table.add_column("note", overflow="fold", min_width=6)
    for entry in reversed(manifest.versions):
        table.add_row(str(entry.version), str(entry.parent) if entry.parent is not None else "-",
                      entry.created.strftime("%Y-%m-%d %H:%M") if entry.created else "-", entry.method,
                      str(entry.n_ops), str(entry.n_entries), _scores(entry.scores), entry.note)
    parts: list = [table]
    rejected = store.rejected()
    if rejected:
        parts.append(Text(f"{len(rejected)} rejected update(s) in {store.rejected_path.name}", style="dim"))
    if not manifest.versions:
        parts = [Text("no versions yet")]
    console.print(Group(*parts))
