"""Bounds on hand-written policy YAML, checked on the event stream before any object is built.

YAML aliases let a few hundred bytes stand for billions of nodes (``a: &a [x, x, ...]``, ``b: &b [*a, *a, ...]``, and
so on). Building that is cheap (aliases share objects), but anything that walks or prints the result (validation,
error messages) expands it: minutes of CPU or all memory. Deep nesting makes the recursive composer and validators
fail with ``RecursionError``. :func:`check_yaml_bounds` walks the parser's events (no recursion, no objects) and
refuses a document whose expanded node count or nesting depth is past the limits, naming the line.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from nlgrad.policy.errors import PolicyFileError

MAX_NODES = 100_000  # expanded (every alias counted as a copy of its anchor); a large real policy has a few thousand
MAX_DEPTH = 50  # a policy is about 6 levels deep


def _where(event) -> str:
    mark = event.start_mark
    return f"line {mark.line + 1} column {mark.column + 1}" if mark is not None else "<file>"


def _too_many(max_nodes: int, written: int, source: Path | str, event) -> PolicyFileError:
    """The error for a document past ``max_nodes``: too large as written, or blown up by its aliases."""
    if written > max_nodes:
        return PolicyFileError(f"the YAML has more than {max_nodes} nodes as written (a policy within its bounds has "
                               "a few thousand); it is refused before it is built", path=source, field=_where(event),
                               value=None)
    return PolicyFileError(f"the YAML expands to more than {max_nodes} nodes (nested aliases: *name references); "
                           "write the content out instead", path=source, field=_where(event),
                           value=getattr(event, "anchor", None))


def check_yaml_bounds(text: str, source: Path | str, *, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`PolicyFileError` if ``text`` nests deeper than ``max_depth`` or expands (aliases included) to
    more than ``max_nodes`` nodes. YAML syntax errors propagate as ``yaml.MarkedYAMLError``."""
    anchors: dict[str, int] = {}  # anchor -> expanded node count of the node it names
    stack: list[list] = []  # open collections: [anchor, expanded count so far]
    written = 0  # nodes as written (an alias counts once): past max_nodes, the file itself is too large

    def add(count: int, event) -> None:
        if stack:
            stack[-1][1] += count
            if stack[-1][1] > max_nodes:
                raise _too_many(max_nodes, written, source, event)

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.CollectionStartEvent, yaml.ScalarEvent, yaml.AliasEvent)):
            written += 1
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append([event.anchor, 1])
            if len(stack) > max_depth:
                raise PolicyFileError(f"the YAML nests deeper than {max_depth} levels", path=source,
                                      field=_where(event), value=None)
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, count = stack.pop()
            if anchor:
                anchors[anchor] = count
            add(count, event)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor:
                anchors[event.anchor] = 1
            add(1, event)
        elif isinstance(event, yaml.AliasEvent):
            add(anchors.get(event.anchor, 1), event)
