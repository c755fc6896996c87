"""A turn-taking two-agent team for TextWorldExpress: planner + actor (a LangMARL team program).

The **planner** (LM, ``team_twx.planner``) writes a one-sentence plan at the start and again every ``plan_every``
actor turns, after reading the actor's recent actions and the latest observation. The **actor** (LM,
``team_twx.actor``) picks one numbered valid action per turn following the current plan. Messages are trace edges:
the plan is an input of every actor call (planner -> actor), and each re-plan depends on the actor's last call
(actor -> planner), so the trace graph shows the conversation turn by turn (and stays acyclic).

Action display, reply matching and the loop breaker are those of the scaffolded single agent,
:mod:`nlgrad.programs.twx_scaffolded` (imported), so the team differs from it only by the planner. ``agents`` maps
agent -> routes (read by LangMARL).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from nlgrad.errors import StepCapReached
from nlgrad.programs import program_template
from nlgrad.programs.action_reply import parse_choice
from nlgrad.programs.twx_scaffolded import note_outcome, pick_action, rank_actions, room_of
from nlgrad.runtime.context import Output, RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Observation, Task

PLANNER, ACTOR = "team_twx.planner", "team_twx.actor"


def parse_plan(text: str, inputs: dict[str, Any]) -> str:  # noqa: ARG001 - parser signature
    """The first non-empty line, without a "Plan:" prefix, at most 200 characters."""
    line = next((ln.strip() for ln in str(text or "").splitlines() if ln.strip()), "")
    if line.lower().startswith("plan:"):
        line = line[5:].strip()
    return line.strip(" \"'")[:200]


class TeamTWXProgram:
    name = "team_twx"
    agents: dict[str, list[str]] = {"planner": [PLANNER], "actor": [ACTOR]}

    def __init__(self, benchmark=None, *, plan_every: int = 4, history_steps: int = 6, loop_breaker: bool = True,
                 planner_options: int = 8):
        self.benchmark = benchmark
        self.plan_every, self.history_steps = max(1, plan_every), history_steps
        self.loop_breaker, self.planner_options = loop_breaker, planner_options
        self.planner = Module(route=PLANNER, template=program_template("team_twx_planner.j2"), parser=parse_plan,
                              max_tokens=32, stop=["\n"], template_name="team_twx_planner.j2")
        self.actor = Module(route=ACTOR, template=program_template("team_twx_actor.j2"), parser=parse_choice,
                            max_tokens=6, stop=["\n"], template_name="team_twx_actor.j2")

    @property
    def routes(self) -> list[str]:
        return [PLANNER, ACTOR]

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        prev: Output = ctx.env_reset()
        obs: Observation = prev.value
        task_text = obs.info.get("task", "")
        tried: dict[str, set[str]] = defaultdict(set)
        lowered: set[str] = set()  # as in twx_scaffolded: actions that would lower the score
        visited: list[str] = []
        history: list[dict[str, str]] = []
        last_action, plan, last_choice = "", None, None
        plans: list[str] = []
        step_cap = ctx.step_cap or 50
        overrides = turns = 0
        while ctx.episode is not None and not ctx.episode.done:
            if ctx.steps_left is not None and ctx.steps_left <= 0:  # no LM call for a step that cannot be taken
                ctx.episode.stopped_by_cap = True
                break
            room = room_of(obs)
            if room and room not in visited:
                visited.append(room)
            state = obs.info.get("state_key", obs.text)
            actions = rank_actions(sorted(obs.valid_actions), task_text, tried[state], lowered)
            if not actions:
                break
            if plan is None or turns % self.plan_every == 0:
                recent = ctx.episode.actions[-self.plan_every:]
                plan = ctx.call(self.planner, after=[prev] + ([last_choice] if last_choice else []),
                                task=task_text, observation=obs.text, visited=visited or ["(none yet)"],
                                step=ctx.episode.steps + 1, step_cap=step_cap, recent=recent,
                                previous_plan=plans[-1] if plans else "",
                                options=[a["text"] for a in actions[: self.planner_options]])
                plans.append(plan.value)
            inputs = {"first": not history, "task": task_text, "last_action": last_action, "observation": obs.text,
                      "step": ctx.episode.steps + 1, "step_cap": step_cap, "actions": actions}
            choice = ctx.call(self.actor, after=[prev], history=list(history), plan=plan, **inputs)
            chosen, overridden = pick_action(ctx, choice, actions, self.loop_breaker)
            overrides += overridden
            action = actions[chosen]["text"]
            tried[state].add(action)
            history += [ctx.trace.node(choice.node)["messages"][-1],
                        {"role": "assistant", "content": str(chosen + 1)}]
            if len(history) > 2 * self.history_steps:  # keep the task turn; drop older steps in one block
                history = history[:2] + history[2 + 2 * (self.history_steps // 2):]
            last_choice, turns = choice, turns + 1
            try:
                prev = ctx.env_step(action, after=[choice])
            except StepCapReached:
                break
            obs, last_action = prev.value.observation, action
            note_outcome(lowered, action, prev.value.reward)
        return {"actions": ctx.episode.actions if ctx.episode else [], "plans": plans, "overrides": overrides,
                "visited": visited}
