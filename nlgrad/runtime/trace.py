"""Traces: every module call, tool call and environment step of one task, as a networkx DiGraph.

Nodes are call *instances* (``n0000``, ``n0001``, ...) with a ``kind`` (input, module, tool, env, output), a
``route`` and a payload; edges are data (or message) dependencies. A loop over steps or an exchange between agents is
therefore a real graph, never a flattened list, and it stays acyclic, so a backward pass can walk it in reverse
topological order. Traces serialize to JSON and load back losslessly.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Iterable

import networkx as nx

from nlgrad.errors import NlgradError

TRACE_FORMAT = 1
NODE_KINDS = ("input", "module", "tool", "env", "output")


class TraceFormatError(NlgradError):
    pass


def to_jsonable(value: Any) -> Any:
    """A JSON-compatible copy of ``value`` (pydantic models and dataclasses become dicts)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump())
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return to_jsonable(asdict(value))
    return repr(value)


class Trace:
    def __init__(self, task_id: str = "", program: str = "", meta: dict[str, Any] | None = None):
        self.graph = nx.DiGraph(task_id=task_id, program=program, meta=to_jsonable(meta or {}))
        self._lock = threading.Lock()

    # ---- building -------------------------------------------------------------------------------------------
    def add_node(self, kind: str, route: str = "", *, parents: Iterable[str] = (), edge_kind: str = "data",
                 **attrs: Any) -> str:
        if kind not in NODE_KINDS:
            raise ValueError(f"unknown node kind {kind!r}; expected one of {NODE_KINDS}")
        with self._lock:
            node_id = f"n{self.graph.number_of_nodes():04d}"
            self.graph.add_node(node_id, kind=kind, route=route, order=self.graph.number_of_nodes(),
                                **{k: to_jsonable(v) for k, v in attrs.items()})
            for parent in dict.fromkeys(parents):
                if parent not in self.graph:
                    raise KeyError(f"parent node {parent!r} is not in this trace")
                self.graph.add_edge(parent, node_id, kind=edge_kind)
        return node_id

    def add_edge(self, src: str, dst: str, kind: str = "data") -> None:
        with self._lock:
            for node in (src, dst):
                if node not in self.graph:
                    raise KeyError(f"node {node!r} is not in this trace")
            self.graph.add_edge(src, dst, kind=kind)

    def update_node(self, node_id: str, **attrs: Any) -> None:
        with self._lock:
            self.graph.nodes[node_id].update({k: to_jsonable(v) for k, v in attrs.items()})

    # ---- reading --------------------------------------------------------------------------------------------
    @property
    def task_id(self) -> str:
        return self.graph.graph.get("task_id", "")

    def node(self, node_id: str) -> dict[str, Any]:
        return {"id": node_id, **self.graph.nodes[node_id]}

    def nodes(self, kind: str | None = None, route: str | None = None) -> list[dict[str, Any]]:
        out = [self.node(n) for n in self.graph.nodes
               if (kind is None or self.graph.nodes[n]["kind"] == kind)
               and (route is None or self.graph.nodes[n]["route"] == route)]
        return sorted(out, key=lambda d: d["order"])

    def module_calls(self, route: str | None = None) -> list[dict[str, Any]]:
        return self.nodes(kind="module", route=route)

    def routes(self) -> list[str]:
        return sorted({d["route"] for d in self.module_calls()})

    def parents(self, node_id: str) -> list[str]:
        return sorted(self.graph.predecessors(node_id))

    def children(self, node_id: str) -> list[str]:
        return sorted(self.graph.successors(node_id))

    def reverse_topological(self) -> list[str]:
        """Node ids from outputs back to inputs (ties broken by recording order, latest first)."""
        order = {n: self.graph.nodes[n]["order"] for n in self.graph.nodes}
        return list(reversed(list(nx.lexicographical_topological_sort(self.graph, key=lambda n: order[n]))))

    def tokens(self) -> int:
        return sum(int(d.get("prompt_tokens", 0)) + int(d.get("completion_tokens", 0)) for d in self.module_calls())

    # ---- (de)serialization ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = nx.node_link_data(self.graph, edges="edges")
        return {"format": TRACE_FORMAT, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "<dict>") -> "Trace":
        if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
            raise TraceFormatError(f"{source}: not an nlgrad trace (field 'format' = {data.get('format') if isinstance(data, dict) else None!r}, expected {TRACE_FORMAT})")
        body = {k: v for k, v in data.items() if k != "format"}
        try:
            graph = nx.node_link_graph(body, directed=True, edges="edges")
        except (KeyError, TypeError, nx.NetworkXError) as exc:
            raise TraceFormatError(f"{source}: malformed trace graph: {exc!r}") from None
        for node_id, attrs in graph.nodes(data=True):
            if attrs.get("kind") not in NODE_KINDS or not isinstance(attrs.get("order"), int):
                raise TraceFormatError(f"{source}: node {node_id!r} has a bad field 'kind'/'order': "
                                       f"{attrs.get('kind')!r}/{attrs.get('order')!r}")
        trace = cls()
        trace.graph = nx.DiGraph(graph)
        return trace

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str, *, source: str = "<json>") -> "Trace":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(f"{source}: not valid JSON ({exc.msg} at char {exc.pos})") from None
        return cls.from_dict(data, source=source)

    def save(self, path: str | Path) -> None:
        from nlgrad.files import write_text_atomic

        write_text_atomic(Path(path), self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        path = Path(path)
        return cls.from_json(path.read_text(encoding="utf-8"), source=str(path))
