"""A tool-using customer-service agent for tau2 (``tau2/retail``, ``tau2/airline``): one LM call per agent turn.

Each turn the agent (route ``tau2.act``, role agent) sees the domain policy and the tool signatures (system block,
fixed for the episode, so a local server's prefix cache keeps it), the earlier turns as compact chat history, and
the newest observation (the user's message, a tool result or an error). It replies with one JSON tool call
``{"tool": ..., "arguments": {...}}`` or a plain-text message to the user; :func:`parse_agent_reply` reads it
robustly (code fences, single quotes, ``name(arg=...)``, text around the JSON) and the environment answers an
unreadable reply with an error observation, so a malformed reply costs a turn, never the task.

The user is simulated by the *critic* role's model (``user_role``), attached to the environment before reset
(see :mod:`nlgrad.benchmarks.tau2`). Its prompt (``tau2_user.j2``) follows tau2's simulation guidelines.

Context budget (8192 tokens on the local server): tool results are shown in full up to ``obs_chars`` in the
current turn and clipped to ``history_obs_chars`` in history; history keeps at most ``history_turns`` turns and
drops the older half in one block when it grows past that (the prefix changes rarely). The first user message is
always kept, since it usually holds the request.

Repeat guard (a small agent may otherwise repeat one tool call until the turn cap and never write to the user): a
tool call identical to one already made in the episode is not run again. The first time, the agent is shown a
notice with that call's earlier result instead (no environment turn is used; at most one notice per distinct call,
so the episode stays bounded). If it repeats the call after the notice, the program plays :data:`ASK_USER` to the
user in its place. Both are recorded on the reply's trace node as an ``override``.

``tau2_idle_floor`` (no LM) is the do-nothing floor: it ends the episode at once, which scores exactly the tasks
whose expected final DB is the initial one (the agent must refuse or only inform).
"""

from __future__ import annotations

import re
from typing import Any

from nlgrad.errors import StepCapReached
from nlgrad.programs import program_template
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Observation, Task
from nlgrad.text import clip, format_action, parse_agent_reply

ROUTE = "tau2.act"
ASK_USER = ("I could not get further with that. Could you tell me exactly what you need, with any ids or details "
            "you have (for example your user id, order id or reservation id)?")
USER_ROUTE = "tau2.user"  # rendered by the user simulator; not an optimizable route of this program


def parse_turn(text: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return parse_agent_reply(text, inputs.get("tool_names"))


def repeat_notice(action: str, earlier: str, limit: int = 600) -> str:
    """What the agent sees instead of running a tool call it already made (``earlier``: what that call got)."""
    return (f"Notice: you already made this tool call earlier in this conversation: "
            f"{clip(action, 200, squash=False)}\nIt returned: {clip(earlier, limit, squash=False)}\nCalling it again "
            "gives the same result, so it was not run. Use that result: call a different tool, or write a message to "
            "the user.")


_OTHER_SPEAKER = re.compile(r"\n\s*(?:agent|assistant|representative|customer service)\s*:", re.I)
_OWN_SPEAKER = re.compile(r"^\s*(?:user|customer)\s*:\s*", re.I)


def clean_user_reply(text: str) -> str:
    """The user's own message only: a leading "Customer:" is dropped, an invented agent turn is cut off."""
    return _OWN_SPEAKER.sub("", _OTHER_SPEAKER.split(text or "")[0]).strip()


class LMUserSimulator:
    """Plays the user with ``role``'s model through the run's LM (cache, ledger, deadline), outside the trace."""

    def __init__(self, ctx: RunContext, module: Module, role: str = "critic", max_tokens: int = 200):
        self.ctx, self.module, self.role, self.max_tokens = ctx, module, role, max_tokens

    def messages(self, instructions: str, conversation: list[dict[str, str]]) -> list[dict[str, str]]:
        """The simulator sees the agent's messages as "user" turns and its own as "assistant" turns."""
        *earlier, last = conversation
        history = [{"role": "user" if m["role"] == "agent" else "assistant", "content": m["content"] or "..."}
                   for m in earlier]
        return self.module.render("", {"instructions": instructions, "agent_message": last["content"]}, history)

    def reply(self, instructions: str, conversation: list[dict[str, str]]) -> str:
        completion = self.ctx.lm.complete(self.role, self.messages(instructions, conversation),
                                          max_tokens=self.max_tokens, deadline=self.ctx.deadline)
        return clean_user_reply(completion.text)


class Tau2AgentProgram:
    name = "tau2_agent"

    def __init__(self, benchmark=None, *, user_role: str = "critic", history_turns: int = 12, obs_chars: int = 4000,
                 history_obs_chars: int = 600, max_tokens: int = 320, user_max_tokens: int = 200):
        self.benchmark = benchmark
        self.user_role = user_role
        self.history_turns, self.obs_chars, self.history_obs_chars = history_turns, obs_chars, history_obs_chars
        self.user_max_tokens = user_max_tokens
        self.act = Module(route=ROUTE, template=program_template("tau2_act.j2"), role="agent", parser=parse_turn,
                          max_tokens=max_tokens, template_name="tau2_act.j2")
        self.user = Module(route=USER_ROUTE, template=program_template("tau2_user.j2"), role=user_role,
                           template_name="tau2_user.j2")

    @property
    def routes(self) -> list[str]:
        return [ROUTE]

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        env = ctx.env
        if env is not None and hasattr(env, "attach_user"):
            env.attach_user(LMUserSimulator(ctx, self.user, self.user_role, self.user_max_tokens))
        prev = ctx.env_reset()
        obs: Observation = prev.value
        info = obs.info
        fixed = {"domain": info.get("domain", ""), "domain_policy": info.get("policy", ""),
                 "tools": info.get("tools", []), "tool_names": info.get("tool_names", [])}
        step_cap = ctx.step_cap or 30
        first: list[dict[str, str]] = []
        history: list[dict[str, str]] = []
        kinds: dict[str, int] = {"tool": 0, "message": 0, "invalid": 0, "repeat_notices": 0, "asked_user": 0}
        tool_results: dict[str, str] = {}  # canonical tool call -> the observation it got
        noticed: set[str] = set()
        done = bool(info.get("done"))
        while ctx.episode is not None and not ctx.episode.done and not done:
            if ctx.steps_left == 0:  # no turn left: do not pay for a reply that cannot be played
                ctx.episode.stopped_by_cap = True
                break
            reply = ctx.call(self.act, after=[prev], history=first + history, observation=obs.text,
                             step=ctx.episode.steps + 1, step_cap=step_cap, **fixed)
            parsed = reply.value
            kinds[parsed["kind"]] = kinds.get(parsed["kind"], 0) + 1
            raw = ctx.trace.node(reply.node).get("output") or ""
            action = format_action(parsed, raw)
            repeated = parsed["kind"] == "tool" and action in tool_results
            if repeated and action not in noticed:
                noticed.add(action)
                kinds["repeat_notices"] += 1
                ctx.trace.update_node(reply.node, override={"chosen": None, "reason": "repeated tool call: not run, "
                                                            "a notice with its earlier result was shown"})
                notice = repeat_notice(action, tool_results[action], self.history_obs_chars)
            elif repeated:
                kinds["asked_user"] += 1
                ctx.trace.update_node(reply.node, override={"chosen": ASK_USER,
                                                            "reason": "tool call repeated after a notice"})
                action, notice = ASK_USER, None
            else:
                notice = None
            turn = [{"role": "user", "content": clip(obs.text, self.history_obs_chars, squash=False)},
                    {"role": "assistant", "content": clip(action or raw, 1200, squash=False) or "(empty reply)"}]
            if not first:
                first = turn  # the user's request stays in view
            else:
                history += turn
            if len(history) > 2 * self.history_turns:  # drop the older half in one block
                history = history[2 * (self.history_turns // 2):]
            if notice is not None:  # no environment turn: the agent answers the notice
                obs = Observation(text=notice, valid_actions=obs.valid_actions, info=obs.info)
                continue
            try:
                prev = ctx.env_step(action or raw, after=[reply])
            except StepCapReached:
                break
            obs = prev.value.observation
            if parsed["kind"] == "tool" and not repeated:
                tool_results[action] = obs.text
            obs = Observation(text=clip(obs.text, self.obs_chars, squash=False), valid_actions=obs.valid_actions,
                              info=obs.info)
        ep = ctx.episode
        return {"ended_by": obs.info.get("ended_by"), "turns": ep.steps if ep else 0, **kinds,
                "tool_errors": len(obs.info.get("errors", []))}


class _StopAtOnce:
    def reply(self, instructions: str, conversation: list[dict[str, str]]) -> str:  # noqa: ARG002
        return "###STOP###"


class Tau2IdleFloor:
    """The do-nothing floor (no LM): the episode ends at once and the DB stays as it was, which is the expected
    final state of every task where the agent must refuse or only answer (airline dev 8/15, test 7/20; retail dev
    3/37, test 4/40)."""

    name = "tau2_idle_floor"
    routes: list[str] = []

    def __init__(self, benchmark=None):
        self.benchmark = benchmark

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:  # noqa: ARG002
        if ctx.env is not None and hasattr(ctx.env, "attach_user"):
            ctx.env.attach_user(_StopAtOnce())
        ctx.env_reset()
        return {"ended_by": "idle floor", "turns": 0}
