"""A plain ReAct agent for interactive benchmarks (``react_plain``): one LM call per step picks one action, and the
program adds nothing of its own.

Each prompt shows the task, the last action, the latest observation and the environment's valid actions numbered
in the environment's order (the first ``max_actions`` of them where it lists more, with a note of how many more);
past steps are compact (observation, action) turns, as in the scaffolded program. The reply is matched to a listed
action (its list number, the action's text, then the closest text: :func:`~nlgrad.programs.action_reply.match_action`) and that action is played.
A reply that matches none is played as written: the environment says what came of it. Where the environment parses
free text (its observations list ``free_text_verbs``), a reply that starts with one of those verbs and is not a
listed action's text is also played as written. There is no ranking, hiding, loop breaker, confirmation or game
knowledge: those belong to the scaffolded program (``twx_scaffolded``), whose own floor they are.

Its route is ``twx.act``, the scaffolded program's act route, so a policy for the one can be shown to the other.
"""

from __future__ import annotations

from typing import Any

from nlgrad.errors import StepCapReached
from nlgrad.programs import program_template
from nlgrad.programs.action_reply import reply_choice
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Observation, Task
from nlgrad.text import clip

ROUTE = "twx.act"
DEFAULT_MAX_ACTIONS = 50  # actions listed per prompt (TWX lists 5-40; ScienceWorld 100-1500, cut to the first 50)
MAX_REPLY_CHARS = 200  # a reply played as written is cut to this length


def parse_plain(text: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The action a reply names, and how: ``number``, ``text`` or ``fuzzy`` (a listed action), ``free`` (an action
    in words that the environment parses, see ``free_verbs``) or ``as written`` (the reply's first line)."""
    choice = reply_choice(text, inputs["actions"], inputs.get("free_verbs"))
    if choice["index"] is not None or choice["match"] == "free":
        return choice
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return {"index": None, "action": (lines[0] if lines else "")[:MAX_REPLY_CHARS], "match": "as written"}


class ReActPlainProgram:
    name = "react_plain"

    def __init__(self, benchmark=None, *, max_actions: int = DEFAULT_MAX_ACTIONS, history_steps: int = 8,
                 history_obs_chars: int = 160):
        self.benchmark = benchmark
        self.max_actions = max_actions
        self.history_steps = history_steps
        self.history_obs_chars = history_obs_chars
        self.act = Module(route=ROUTE, template=program_template("react_plain.j2"), role="agent", parser=parse_plain,
                          max_tokens=16, stop=["\n"], template_name="react_plain.j2")

    @property
    def routes(self) -> list[str]:
        return [ROUTE]

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        prev = ctx.env_reset()
        obs: Observation = prev.value
        task_text = obs.info.get("task", "")
        history: list[dict[str, str]] = []
        last_action = ""
        step_cap = ctx.step_cap or 50
        unmatched = 0
        while ctx.episode is not None and not ctx.episode.done:
            if ctx.steps_left == 0:  # no step left: do not pay for an action that cannot be played
                ctx.episode.stopped_by_cap = True
                break
            actions = list(obs.valid_actions[: self.max_actions])
            verbs = list(obs.info.get("free_text_verbs") or [])
            if not actions and not verbs:
                break
            inputs: dict[str, Any] = {"task": task_text, "last_action": last_action, "observation": obs.text,
                                      "step": ctx.episode.steps + 1, "step_cap": step_cap, "actions": actions,
                                      "more": max(0, len(obs.valid_actions) - len(actions))}
            if verbs:
                inputs["free_verbs"] = verbs
            choice = ctx.call(self.act, after=[prev], history=list(history), **inputs)
            action = choice.value["action"]
            unmatched += choice.value["match"] == "as written"
            history += [{"role": "user", "content": clip(obs.text, self.history_obs_chars)},
                        {"role": "assistant", "content": action}]
            if len(history) > 2 * self.history_steps:  # drop the older half in one block (prefix changes rarely)
                history = history[2 * (self.history_steps // 2):]
            try:
                prev = ctx.env_step(action, after=[choice])
            except StepCapReached:
                break
            obs, last_action = prev.value.observation, action
        return {"actions": ctx.episode.actions if ctx.episode else [], "unmatched": unmatched}
