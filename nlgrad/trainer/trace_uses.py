"""Who used each module call's output, read from the trace's data edges (IAPO's support / failed-use structure, and
TAPO's next observation).

A module call's *uses* are the environment-step and tool nodes its output reached along ``data`` edges, directly or
through other module calls only (e.g. ``twx_react``'s act call -> confirm call -> ``env.step``; HotpotQA's query call
-> ``retrieve`` tool). A use is

- **supported** when it succeeded: an ``env.step`` that changed the environment's state (its state key differs
  from the previous environment node's) or earned a positive reward; a tool call that returned a non-empty result;
- **failed** otherwise: an ``env.step`` that left the state unchanged with reward <= 0 (an invalid or fruitless
  action), a tool call that raised (``error``) or returned nothing (``None``, ``""``, ``[]``, ``{}``).

``states`` are the episode's state keys, one per environment node in order (:mod:`nlgrad.trainer.env_states`);
without them (or with a count that does not match) each node's observation text stands in.
"""

from __future__ import annotations

from dataclasses import dataclass

from nlgrad.runtime.trace import Trace


@dataclass(frozen=True)
class CallUses:
    supported: int = 0
    failed: int = 0
    next_observation: str | None = None  # the observation of the first environment step that used the call


def consumers(trace: Trace, node_id: str) -> list[str]:
    """Env-step and tool nodes reached from ``node_id`` by data edges through module nodes only, in trace order."""
    graph = trace.graph
    found, seen, frontier = set(), {node_id}, [node_id]
    while frontier:
        current = frontier.pop()
        for child in graph.successors(current):
            if graph.edges[current, child].get("kind", "data") != "data" or child in seen:
                continue
            seen.add(child)
            kind, route = graph.nodes[child]["kind"], graph.nodes[child]["route"]
            if kind == "module":
                frontier.append(child)
            elif kind == "tool" or (kind == "env" and route == "env.step"):
                found.add(child)
    return sorted(found, key=lambda n: graph.nodes[n]["order"])


def _empty(result) -> bool:
    return result is None or (isinstance(result, (str, list, dict, tuple)) and not result)


def call_uses(trace: Trace, states: list[str] | None = None) -> dict[str, CallUses]:
    """``{module node id: CallUses}`` for every module call of the trace."""
    env = trace.nodes(kind="env")
    keys = list(states) if states is not None and len(states) == len(env) else [n.get("observation", "") for n in env]
    position = {n["id"]: k for k, n in enumerate(env)}
    out = {}
    for call in trace.module_calls():
        supported = failed = 0
        next_observation = None
        for node_id in consumers(trace, call["id"]):
            node = trace.node(node_id)
            if node["kind"] == "tool":
                ok = "error" not in node and not _empty(node.get("result"))
            else:
                k = position[node_id]
                ok = (k > 0 and keys[k] != keys[k - 1]) or float(node.get("reward") or 0.0) > 0
                if next_observation is None:
                    next_observation = str(node.get("observation", ""))
            supported += ok
            failed += not ok
        out[call["id"]] = CallUses(supported, failed, next_observation)
    return out
