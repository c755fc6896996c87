"""LangMARL: agent-level language credit for cooperating agents (centralised training, decentralised execution).

A team program's agents are LM modules with their own routes (``program.agents``: agent -> routes; a program
without it counts each route as one agent). Each agent's policy is its own route set. One ``propose`` call:

1. K team rollouts (a seeded train minibatch, K = ``--batch``) with the current policies;
2. one **central critic** call per trajectory returns structured credit for every agent (:class:`TeamCredit`:
   contribution in [-1, 1], what worked, what to improve, a policy suggestion). Each agent's role context (first /
   intermediate / final responder) comes from the trace graph: the topological order of the agent's first call
   (the team's structure, the messages and the credit schemas are :mod:`nlgrad.credit.team`).
   ``credit_mode="central_global"`` is the ablation: one shared evaluation of the team (:class:`GlobalCredit`),
   handed to every agent unchanged;
3. a per-agent **gradient**: a short improvement note from that agent's credit and its current policy;
4. per-agent **aggregation** across the K trajectories: an LM groups notes that say the same thing (optional,
   ``llm_aggregate``), then :func:`nlgrad.methods.nlpg.aggregate.aggregate` keeps lessons supported by at least
   ``--min-support`` distinct trajectories, resolves contradictions toward the majority and drops one-offs and
   instance details;
5. each agent's policy is updated through :func:`apply_update` under the policy bounds (one bounded update per
   agent); the shared loop's paired validation gate (the same as NLPG's) accepts or rejects the team candidate.

Cost per iteration: K rollouts + K critic calls + at most K x agents gradient calls (skipped for agents whose
credit has nothing to improve) + at most one aggregation call per agent + the shared gate (2 x ``--val`` rollouts).

Files under ``iter-NNNN/``: ``credits.json``, ``notes.json``, ``aggregate.json``, ``update.json``.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from nlgrad.credit.team import (AgentCredit, GlobalCredit, TeamCredit, agent_routes, match_credits, message_view,
                                team_structure)
from nlgrad.errors import LMCallError, StructuredOutputError
from nlgrad.lm.fanout import fan_out
from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.estimate import RunShape, loop_calls
from nlgrad.methods.lesson_checks import workspace_instance_tokens
from nlgrad.methods.nlpg.aggregate import aggregate
from nlgrad.methods.nlpg.proposals import Candidate
from nlgrad.methods.prompts import method_module
from nlgrad.methods.reply_fields import IntList
from nlgrad.methods.rule_pool import is_placeholder, match_route
from nlgrad.policy import PolicyMemory, UpdateProvenance, UpdateReport, apply_update, render_line
from nlgrad.runtime.module import Module, route_instructions
from nlgrad.runtime.trace import Trace
from nlgrad.text import clip

log = logging.getLogger(__name__)
CreditMode = Literal["central_credit", "central_global"]


def _text(value: Any, limit: int = 500) -> str:
    return clip(value or "", limit)


# ------------------------------------------------------------------------------------------------ reply schemas
class AgentNote(BaseModel):
    note: str = ""
    when: str | None = None
    replaces: str | None = None
    route: str | None = None

    @field_validator("note", "when", "replaces", "route", mode="before")
    @classmethod
    def _strip(cls, value):
        return " ".join(str(value).split()) if value is not None else None


class Lesson(BaseModel):
    text: str
    when: str | None = None
    sources: IntList = Field(default_factory=list)


class LessonList(BaseModel):
    lessons: list[Lesson] = Field(default_factory=list)


def _module(name: str) -> Module:
    return method_module(f"{name}.j2", f"langmarl.{name}", role="critic")


# ------------------------------------------------------------------------------------------------ the method
class LangMARL:
    name = "langmarl"

    def __init__(self, *, credit_mode: CreditMode = "central_credit", llm_aggregate: bool = True,
                 max_lessons: int = 3, max_messages: int = 10, critic_tokens: int = 512, note_tokens: int = 128,
                 skip_neutral_successes: bool = True, min_support: int = 2):
        if min_support < 1:
            raise ValueError(f"min_support must be at least 1, got {min_support}")
        self.min_support = min_support  # distinct traces an agent's lesson needs (nlgrad optimize --min-support)
        if credit_mode not in ("central_credit", "central_global"):
            raise ValueError(f"credit_mode must be central_credit or central_global, got {credit_mode!r}")
        self.credit_mode, self.llm_aggregate, self.max_lessons = credit_mode, llm_aggregate, max_lessons
        self.max_messages, self.critic_tokens, self.note_tokens = max_messages, critic_tokens, note_tokens
        self.skip_neutral_successes = skip_neutral_successes
        self._credit, self._global = _module("langmarl_credit"), _module("langmarl_global")
        self._gradient, self._aggregate = _module("langmarl_gradient"), _module("langmarl_aggregate")
        self.skipped: list[dict[str, str]] = []

    def _ask(self, ws: Workspace, role: str, module: Module, schema, what: str, max_tokens: int, **inputs):
        try:
            return ws.lm.structured(role, module.render("", inputs), schema, max_tokens=max_tokens)
        except (StructuredOutputError, LMCallError) as exc:
            log.warning("langmarl skipped %s: %s", what, exc)
            self.skipped.append({"what": what, "reason": str(exc)[:500]})
            return None

    # ---- step 2: central critic --------------------------------------------------------------------------------
    def credit(self, ws: Workspace, trace: Trace, result, routes: dict[str, list[str]]) -> dict[str, Any]:
        structure = team_structure(trace, routes)
        agents = [a["name"] for a in structure]
        common = {"outcome": "success" if result.success else "failure", "score": f"{result.score:.2f}",
                  "feedback": _text(result.feedback, 600), "agents": structure,
                  "messages": message_view(trace, routes, max_messages=self.max_messages)}
        record: dict[str, Any] = {"task_id": result.task_id, "success": result.success, "score": result.score,
                                  "structure": structure, "credits": {}, "missing": [], "unknown": []}
        if not agents:
            record["skipped"] = "no agent acted"
            return record
        if self.credit_mode == "central_global":
            reply = self._ask(ws, "critic", self._global, GlobalCredit, f"global credit of {result.task_id}",
                              self.critic_tokens, **common)
            if reply is None:
                record["skipped"] = "critic reply unusable after a re-ask"
                return record
            shared = AgentCredit(agent="team", contribution=result.score if result.success else -0.5,
                                 what_worked=reply.what_worked, what_to_improve=reply.what_to_improve,
                                 policy_suggestion=reply.policy_suggestion)
            record["summary"] = reply.summary
            record["credits"] = {a: shared.model_copy(update={"agent": a}).model_dump() for a in agents}
            return record
        reply = self._ask(ws, "critic", self._credit, TeamCredit, f"team credit of {result.task_id}",
                          self.critic_tokens, **common)
        if reply is None:
            record["skipped"] = "critic reply unusable after a re-ask"
            return record
        credits, missing, unknown = match_credits(reply, agents, routes)
        record.update(summary=reply.summary, credits={a: c.model_dump() for a, c in credits.items()},
                      missing=missing, unknown=unknown)
        return record

    # ---- step 3: per-agent gradient ----------------------------------------------------------------------------
    def gradient(self, ws: Workspace, memory: PolicyMemory, agent: str, agent_routes_: list[str],
                 position: str, credit: dict[str, Any], record: dict[str, Any]) -> dict[str, Any] | None:
        if not (credit.get("what_to_improve") or credit.get("policy_suggestion")):
            return None
        if self.skip_neutral_successes and record["success"] and credit.get("contribution", 0) >= 0 \
                and not credit.get("what_to_improve"):
            return None
        entries = [{"id": e.id, "line": render_line(e)[2:]}
                   for r in agent_routes_ for e in memory.active_entries(r)]
        instructions = " ".join(route_instructions(ws.program, r) for r in agent_routes_)
        reply = self._ask(ws, "optimizer", self._gradient, AgentNote, f"gradient of {agent} on {record['task_id']}",
                          self.note_tokens, agent=agent, position=position, instructions=_text(instructions, 500),
                          entries=entries, outcome="success" if record["success"] else "failure",
                          score=f"{record['score']:.2f}", credit=credit, routes=agent_routes_)
        if reply is None or is_placeholder(reply.note) or len(reply.note or "") < 8:
            return None
        route = match_route(reply.route, agent_routes_, agent_routes_[0])
        known = {e["id"] for e in entries}
        return {"agent": agent, "route": route, "text": reply.note[:400], "when": reply.when or None,
                "replaces": reply.replaces if reply.replaces in known else None, "trace_id": record["task_id"]}

    # ---- step 4: per-agent aggregation -------------------------------------------------------------------------
    def candidates(self, ws: Workspace, agent: str, position: str, notes: list[dict[str, Any]]) -> list[Candidate]:
        raw = [Candidate(route=n["route"], text=n["text"], when=n["when"], trace_ids=[n["trace_id"]],
                         replaces=n["replaces"]) for n in notes]
        if not self.llm_aggregate or len(notes) < 2:
            return raw
        reply = self._ask(ws, "optimizer", self._aggregate, LessonList, f"aggregation for {agent}", 256,
                          agent=agent, position=position, notes=[n["text"] for n in notes],
                          max_lessons=self.max_lessons)
        if reply is None:
            return raw
        out = []
        for lesson in reply.lessons[: self.max_lessons]:
            sources = [notes[i - 1] for i in dict.fromkeys(lesson.sources) if 1 <= i <= len(notes)]
            text = " ".join(lesson.text.split())
            if not sources or is_placeholder(text) or len(text) < 8:
                continue
            replaces = {s["replaces"] for s in sources if s["replaces"]}
            out.append(Candidate(route=sources[0]["route"], text=text[:400], when=lesson.when or None,
                                 trace_ids=sorted({s["trace_id"] for s in sources}),
                                 replaces=replaces.pop() if len(replaces) == 1 else None,
                                 notes=[f"grouped notes {sorted(set(lesson.sources))}"]))
        return out

    # ---- one iteration -----------------------------------------------------------------------------------------
    @classmethod
    def estimate_calls(cls, options: dict[str, Any], shape: RunShape) -> dict[str, float]:
        """One iteration (see the module docstring; one agent per route assumed): the batch's rollouts and the shared
        gate, a central critic call per rollout, at most one gradient call per rollout and agent, and one aggregation
        call per agent with ``llm_aggregate``."""
        agents = shape.routes
        return {**loop_calls(shape), "critic": shape.batch,
                "optimizer": shape.batch * agents + (agents if options["llm_aggregate"] else 0)}

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        cfg = ws.config
        routes = agent_routes(ws.program)
        batch = ws.sampler.sample(ws.train_tasks, cfg.batch, iteration)
        rollouts = ws.rollouts(batch, memory, label="rollouts", iteration=iteration)
        batch_mean = sum(rollouts.scores) / len(rollouts.scores) if rollouts.scores else 0.0

        credited = [r for r in rollouts.results if rollouts.traces.get(r.task_id) is not None and not r.error]
        # each trace's credit call is independent of the others': they run side by side
        records = fan_out(lambda result: self.credit(ws, rollouts.traces[result.task_id], result, routes),
                          credited, ws.lm.parallelism("critic"))
        ws.write(iteration, "credits.json", {"mode": self.credit_mode, "records": records,
                                              "skipped": list(self.skipped)})

        notes: dict[str, list[dict[str, Any]]] = {a: [] for a in routes}
        positions: dict[str, str] = {}
        for record in records:
            for item in record["structure"]:
                positions.setdefault(item["name"], item["position"])
                credit = record["credits"].get(item["name"])
                if credit is None:
                    continue
                note = self.gradient(ws, memory, item["name"], routes[item["name"]], item["position"], credit, record)
                if note:
                    notes[item["name"]].append(note)
        ws.write(iteration, "notes.json", notes)

        specific = workspace_instance_tokens(ws, rollouts.traces.values())
        instructions = {route: route_instructions(ws.program, route) for route in ws.program.routes}
        candidate, report_all, all_ops, agg_out = memory, UpdateReport(), [], {}
        for agent, agent_notes in notes.items():
            cands = self.candidates(ws, agent, positions.get(agent, ""), agent_notes)
            ops, agg = aggregate(cands, min_support=self.min_support, instance_specific=specific, iteration=iteration,
                                 instructions=instructions)
            ops = [op.model_copy(update={"reason": op.reason.replace("NLPG", f"LangMARL agent {agent}")})
                   for op in ops]
            agg_out[agent] = {"kept": agg.kept, "dropped": agg.dropped}
            if not ops:
                continue
            trace_ids = sorted({t for op in ops for t in op.trace_ids})
            candidate, report = apply_update(candidate, ops, cfg.bounds, UpdateProvenance(
                source="langmarl", iteration=iteration, trace_ids=trace_ids))
            all_ops += ops
            report_all = _merge_reports(report_all, report)
        ws.write(iteration, "aggregate.json", agg_out)
        if not all_ops:
            return Proposal(None, [], None, batch_mean, note="no agent lesson had enough support")
        ws.write(iteration, "update.json", {"ops": [op.model_dump() for op in all_ops],
                                            "report": report_all.model_dump(mode="json")})
        if not report_all.changed:
            return Proposal(None, all_ops, report_all, batch_mean, note="every operation was trimmed by the bounds")
        candidate = candidate.model_copy(update={"n_ops": len(report_all.applied)})
        return Proposal(candidate, all_ops, report_all, batch_mean, note=report_all.summary())


def _merge_reports(a: UpdateReport, b: UpdateReport) -> UpdateReport:
    return UpdateReport(applied=a.applied + b.applied, trimmed=a.trimmed + b.trimmed,
                        merged_duplicates=a.merged_duplicates + b.merged_duplicates,
                        total_cost=a.total_cost + b.total_cost, text_ops=a.text_ops + b.text_ops)


class LangMARLGlobal(LangMARL):
    """The ``central_global`` ablation under its own method name, so a comparison shows both rows."""

    name = "langmarl_global"

    def __init__(self, **options: Any):
        options.setdefault("credit_mode", "central_global")
        super().__init__(**options)
