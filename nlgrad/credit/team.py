"""Team credit: who acted in a team's trace, in what position, what each agent saw and said, and the central
critic's credit for each agent (LangMARL, :mod:`nlgrad.methods.langmarl`).

A team program's agents are LM modules with their own routes (``program.agents``: agent -> routes; a program
without it counts each route as one agent). An agent's role context (first / intermediate / final responder) comes
from the trace graph: the topological order of the agent's first call; the agents it received messages from are its
module -> module edges. The central critic answers with :class:`TeamCredit` (one :class:`AgentCredit` per agent), or,
in the ``central_global`` ablation, with one :class:`GlobalCredit` for the whole team.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
from pydantic import BaseModel, Field, field_validator, model_validator

from nlgrad.runtime.trace import Trace
from nlgrad.text import clip


def _text(value: Any, limit: int = 500) -> str:
    return clip(value or "", limit)


# ------------------------------------------------------------------------------------------------ reply schemas
class AgentCredit(BaseModel):
    agent: str
    contribution: float = Field(default=0.0, description="-1 caused the failure .. 1 made the success")
    what_worked: str = ""
    what_to_improve: str = ""
    policy_suggestion: str = ""

    @field_validator("agent", mode="before")
    @classmethod
    def _agent(cls, value):
        return str(value or "").strip()

    @field_validator("what_worked", "what_to_improve", "policy_suggestion", mode="before")
    @classmethod
    def _clip(cls, value):
        return _text(value, 400)

    @field_validator("contribution", mode="before")
    @classmethod
    def _contribution(cls, value):
        words = {"high": 1.0, "positive": 0.5, "medium": 0.5, "none": 0.0, "neutral": 0.0, "low": 0.0,
                 "negative": -0.5}
        if isinstance(value, str) and value.strip().lower() in words:
            return words[value.strip().lower()]
        try:
            return max(-1.0, min(1.0, float(value)))
        except (TypeError, ValueError):
            return 0.0


class TeamCredit(BaseModel):
    """Central critic reply: one credit object per agent (a list, or a mapping agent -> credit)."""

    summary: str = ""
    agents: list[AgentCredit] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _mapping(cls, data):
        if isinstance(data, dict) and isinstance(data.get("agents"), dict):
            data = {**data, "agents": [{"agent": k, **(v if isinstance(v, dict) else {"what_to_improve": v})}
                                       for k, v in data["agents"].items()]}
        return data

    @field_validator("summary", mode="before")
    @classmethod
    def _clip(cls, value):
        return _text(value, 500)


class GlobalCredit(BaseModel):
    """Ablation reply: one evaluation of the whole team."""

    summary: str = ""
    what_worked: str = ""
    what_to_improve: str = ""
    policy_suggestion: str = ""

    @field_validator("summary", "what_worked", "what_to_improve", "policy_suggestion", mode="before")
    @classmethod
    def _clip(cls, value):
        return _text(value, 400)



# ------------------------------------------------------------------------------------------------ team structure
def agent_routes(program) -> dict[str, list[str]]:
    """agent -> its routes: ``program.agents`` when the program declares a team, else one agent per route."""
    agents = getattr(program, "agents", None)
    if agents:
        return {name: list(routes) for name, routes in agents.items()}
    return {route: [route] for route in program.routes}


def _agent_of(routes: dict[str, list[str]]) -> dict[str, str]:
    return {route: agent for agent, rs in routes.items() for route in rs}


def topological_calls(trace: Trace) -> list[dict[str, Any]]:
    """Module calls in topological order of the trace graph (ties: recording order)."""
    order = {n: trace.graph.nodes[n]["order"] for n in trace.graph.nodes}
    ids = nx.lexicographical_topological_sort(trace.graph, key=lambda n: order[n])
    return [trace.node(n) for n in ids if trace.graph.nodes[n]["kind"] == "module"]


def team_structure(trace: Trace, routes: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Agents that acted, in order of their first call, with their position (first / intermediate / final
    responder, or sole responder) and the agents they received messages from (module -> module edges)."""
    owner = _agent_of(routes)
    first: list[str] = []
    receives: dict[str, set[str]] = {}
    for node in topological_calls(trace):
        agent = owner.get(node["route"])
        if agent is None:
            continue
        if agent not in first:
            first.append(agent)
        for parent in trace.parents(node["id"]):
            sender = owner.get(trace.graph.nodes[parent].get("route", "")) \
                if trace.graph.nodes[parent]["kind"] == "module" else None
            if sender and sender != agent:
                receives.setdefault(agent, set()).add(sender)
    out = []
    for i, agent in enumerate(first):
        if len(first) == 1:
            position = "sole responder: acts alone on the task"
        elif i == 0:
            position = "first responder: acts first on the raw task; teammates build on its output"
        elif i == len(first) - 1:
            position = "final responder: produces the team's final answer or action from its teammates' messages"
        else:
            position = "intermediate responder: receives teammates' messages and passes its own on"
        out.append({"name": agent, "position": position, "receives": sorted(receives.get(agent, set()))})
    return out


def message_view(trace: Trace, routes: dict[str, list[str]], *, max_messages: int = 10, saw_chars: int = 260,
                 said_chars: int = 160) -> list[dict[str, Any]]:
    """Each agent call as (agent, what it saw, what it said), clipped; long dialogues keep the start and the end."""
    owner = _agent_of(routes)
    calls = [n for n in topological_calls(trace) if n["route"] in owner]
    items = []
    for i, node in enumerate(calls, start=1):
        messages = node.get("messages") or []
        said = node.get("output", "")
        if node.get("override"):
            said = f"{said} (overridden by the program: {node['override'].get('chosen')})"
        items.append({"index": i, "agent": owner[node["route"]],
                      "saw": clip(messages[-1]["content"] if messages else "", saw_chars),
                      "said": clip(said, said_chars)})
    if len(items) > max_messages:
        head = max_messages // 3
        items = items[:head] + items[-(max_messages - head):]
    return items


def match_credits(reply: TeamCredit, agents: list[str], routes: dict[str, list[str]]
                  ) -> tuple[dict[str, AgentCredit], list[str], list[str]]:
    """Credits by agent name (case/punctuation-insensitive; a route name also identifies its agent).
    Returns (credits, missing agents, unknown names in the reply)."""
    def norm(s: str) -> str:
        return "".join(ch for ch in s.lower() if ch.isalnum())

    lookup = {norm(a): a for a in agents}
    for agent in agents:
        for route in routes.get(agent, []):
            lookup.setdefault(norm(route), agent)
    credits: dict[str, AgentCredit] = {}
    unknown = []
    for credit in reply.agents:
        agent = lookup.get(norm(credit.agent))
        if agent is None:
            unknown.append(credit.agent)
        elif agent not in credits:
            credits[agent] = credit.model_copy(update={"agent": agent})
    return credits, [a for a in agents if a not in credits], unknown
