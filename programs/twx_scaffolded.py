"""The scaffolded agent for TextWorldExpress and ScienceWorld (``twx_scaffolded``): one LM call per step picks one
valid action, and the program around it carries hand-written game knowledge.

The environments report only what the game says (its text and its valid actions, in its order). Everything below is
this program's own decision, fixed before any policy is learned, and measured as its own floor: the program driven
by a constant reply (``scripts/measure_benchmarks.py --variants alone``). A learned policy's gain is judged against
that floor. The plain ReAct program (``nlgrad.programs.react_plain``) does none of it. Per-benchmark knowledge is in
``nlgrad.programs.game_knowledge`` (ScienceWorld's in ``nlgrad.programs.sciworld_knowledge``).

- the valid actions are sorted alphabetically, then ranked: untried first and by overlap with the task's words (not
  counting verbs the task uses for every object, such as ScienceWorld's "focus"; actions such as "close ..." or
  "inventory" last), tried ones marked; the prompt shows the task, the latest observation, the rooms visited and
  the numbered actions;
- on ScienceWorld the program's view of the episode (``ScienceWorldView``) chooses the 20 actions to list from the
  game's 100-1500 and orders them (that order is kept), and names the irreversible ones the task's words settle;
- the reply is matched robustly to a valid action (number, exact text, then closest text); where the environment
  parses free text itself (ScienceWorld: its observations list ``free_text_verbs``), a reply that names no listed
  action but starts with one of those verbs is played as written instead of being forced onto the closest one;
- an action already taken in the same state is replaced by the first untried one in display order (loop breaker),
  recorded in the trace as an override; so is an unparsable reply;
- where the game offers more actions than ``max_actions`` (TWX ``cooking``: 20-35), the list keeps the untried
  actions of useful kinds (and no others unless none is left: tried, low-priority such as ``examine``), instead of
  filling its end with ``examine ...``;
- once the agent has read something (the observation after a ``read ...`` action: TWX's cookbook), the ranking
  matches actions against what it read instead of the task, so the recipe's ingredients and steps come first (and
  the cookbook itself no longer does); eating or drinking an object the task does not name is not listed;
- reading comes first: until the agent has read something, an untried ``read ...`` action ranks before the other
  untried actions;
- where the game knowledge says that what is read poses math problems (TWX ``arithmetic``), a second module
  (``twx.solve``) writes the problem as an arithmetic expression and a calculator tool evaluates it: the prompt
  then shows ``Calculator: 22 + 23 = 45``, actions naming the result (``take 45 olives``) rank first and actions
  naming another quantity are not listed;
- an action that would lower the score is listed after the other untried actions in *every* state and marked: one
  whose latest play lowered it (TWX ``twc``: putting an object in a wrong place), and ``take X`` after
  ``put X in/on Y`` raised it;
- where the game knowledge names irreversible action families (cooking's ``cook X in ...`` and
  ``slice/dice/chop X``, ScienceWorld's ``focus on ...``), a pick from one is checked first by a third
  module (``twx.confirm``, see ``nlgrad.programs.irreversible``) that sees only that choice, what was read and
  "none of these yet", asked in two option orders; a family action is played on the module's say-so only when both
  answers name it (the act's pick is played once nothing else is listed), and a lesson about that choice has a
  route of its own; one the task's own words name (ScienceWorld's "First, focus on the thermometer.") is played
  without the check;
- action kinds the game knowledge names as never moving its games forward (cooking's ``put``/``drop``) rank with
  ``examine`` and are not listed while fresh actions remain;
- past steps are kept as compact (observation, action) turns, append-only and trimmed in blocks, and only the
  current turn carries the full observation and action list, so the local server's prefix cache serves most of
  each prompt.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from nlgrad.errors import StepCapReached
from nlgrad.programs import program_template
from nlgrad.programs.action_reply import parse_choice
from nlgrad.programs.calculator import calculate, extract_expression
from nlgrad.programs.game_knowledge import GameKnowledge, knowledge_for
from nlgrad.programs.irreversible import (CONFIRM_ROUTE, NONE_OF_THESE, agreed_choice, confirm_orders, family_of,
                                          is_irreversible, parse_confirmation)
from nlgrad.runtime.context import Output, RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Observation, Task
from nlgrad.text import clip

ROUTE = "twx.act"
SOLVE_ROUTE = "twx.solve"
DEFAULT_MAX_ACTIONS = 15  # actions listed where neither the caller nor the benchmark bounds the list
_QUANTITY = re.compile(r"\d+(?:\.\d+)?")


# Words that say nothing about which object matters. Verbs the task text uses for every object are here too: with
# "focus" counted, every (irreversible) "focus on X" matched a ScienceWorld task's "First, focus on the substance".
_STOP = {"the", "a", "an", "to", "and", "it", "is", "your", "task", "of", "in", "on", "once", "you", "for", "with",
         "that", "this", "then", "find", "search", "environment", "take", "focus"}
# Actions that rarely move an episode forward; shown last (they stay available).
LOW_PRIORITY_PREFIXES = ("close ", "inventory", "look around", "examine ")
# Consuming an object is irreversible (TWX cooking: eating an ingredient ends the game): not listed unless the task
# itself names the object ("enjoy your meal" -> "eat meal"; see consumes_unnamed).
CONSUME_PREFIXES = ("eat ", "drink ")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP}


def consumes_unnamed(action: str, task_words: set[str]) -> bool:
    """Eating or drinking an object the task does not name: never listed (a small agent often picks the last
    positions, where a low-priority ``eat red apple`` would end a cooking game)."""
    return action.startswith(CONSUME_PREFIXES) and not (_words(action.split(" ", 1)[-1]) & task_words)


_PUT = re.compile(r"^put (.+?) (?:in|on|into) .+$")


def note_outcome(lowering: set[str], action: str, reward: float) -> None:
    """Update the actions that would lower the score after ``action`` got ``reward``: an action that lowered it is
    added, one that did not is removed, and a placement that raised it adds taking the object back out."""
    (lowering.add if reward < 0 else lowering.discard)(action)
    placed = _PUT.match(action)
    if placed and reward > 0:
        lowering.add(f"take {placed.group(1)}")


def rank_actions(actions: list[str], task_text: str, tried: set[str],
                 lowered: set[str] | frozenset[str] = frozenset(), read_text: str = "",
                 fruitless: set[str] | frozenset[str] = frozenset(), match_words: bool = True,
                 answer: str = "", low_priority: tuple[str, ...] = LOW_PRIORITY_PREFIXES) -> list[dict[str, Any]]:
    """Valid actions (less the unsafe ones, :func:`consumes_unnamed`) in display order: untried first; among those,
    actions in ``lowered`` (they would lower the score, see :func:`note_outcome`) last; then low-priority kinds last
    (``low_priority`` prefixes, by default ``LOW_PRIORITY_PREFIXES``); then actions naming the number ``answer`` (a
    calculator's result) first (those naming another number are not listed), then ``read ...`` actions (with
    ``match_words``, until ``read_text`` is set), then those in ``fruitless`` last, then by overlap with the words of
    ``read_text`` (what the agent read: a recipe, more specific than the task) or else of the task.
    ``match_words=False`` keeps the given order instead of the word overlap (the environment ranked the list).
    An action in ``lowered`` carries ``"lowered": True`` (the key is absent otherwise, so prompts without such
    actions are unchanged)."""
    task_words = _words(task_text)
    goal_words = _words(read_text) if read_text.strip() else task_words
    quantities = {a: _QUANTITY.findall(a) for a in actions} if answer else {}

    def key(item: tuple[int, str]):
        index, action = item
        overlap = len(goal_words & set(re.findall(r"[a-z]+", action.lower()))) if match_words else 0
        names_answer = answer in quantities.get(action, ())
        reads = match_words and not read_text and action.startswith("read ")  # until something has been read
        return (action in tried, action in lowered, action.startswith(low_priority), not names_answer,
                not reads, action in fruitless, -overlap, index)

    safe = [a for a in actions if not consumes_unnamed(a, task_words)] or actions
    if answer:  # an action naming another quantity contradicts the calculation: not listed
        safe = [a for a in safe if answer in quantities[a] or not quantities[a]] or safe
    ordered = sorted(enumerate(safe), key=key)
    return [{"text": a, "tried": a in tried, **({"lowered": True} if a in lowered else {})} for _, a in ordered]


def shown_actions(ranked: list[dict[str, Any]], max_actions: int, tail: int = 0,
                  low_priority: tuple[str, ...] = LOW_PRIORITY_PREFIXES) -> list[dict[str, Any]]:
    """The ranked actions to list: all of them when they fit in ``max_actions``; otherwise the fresh ones (untried,
    not lowering the score, not starting with a ``low_priority`` prefix) first, then at most ``tail`` others, in
    ranked order (the best ``max_actions`` others when nothing is fresh)."""
    if len(ranked) <= max_actions:
        return ranked

    def fresh(action: dict[str, Any]) -> bool:
        return not (action["tried"] or action.get("lowered") or action["text"].startswith(low_priority))

    keep = [a for a in ranked if fresh(a)][:max_actions]
    room = min(tail, max_actions - len(keep)) if keep else max_actions  # nothing fresh: the best of the rest
    others = [a for a in ranked if not fresh(a)][: max(0, room)]
    kept = {id(a) for a in keep + others}
    return [a for a in ranked if id(a) in kept]


def math_problem(text: str) -> str:
    """The sentences of ``text`` that carry numbers, when it has two or more numbers (a math problem); else ''."""
    if len(_QUANTITY.findall(text)) < 2:
        return ""
    sentences = re.split(r"(?<=[.!?:])\s+(?=[A-Z])|\n", text)
    return " ".join(s.strip() for s in sentences if _QUANTITY.search(s))


def parse_expression(text: str, inputs: dict[str, Any]) -> str:  # noqa: ARG001 - parser signature
    return extract_expression(text)


def pick_action(ctx: RunContext, choice: Output, actions: list[dict[str, Any]],
                loop_breaker: bool) -> tuple[int, bool]:
    """The index (in ``actions``, display order) of the action to play for a ``choice`` parsed by
    :func:`parse_choice`, and whether the model's pick was overridden.

    An unparsable reply, or (with ``loop_breaker``) an action already tried in this state while an untried one is
    shown, is replaced by the first untried action (the first action when all were tried); the override is recorded
    on the choice's trace node.
    """
    index = choice.value["index"]
    untried = [i for i, a in enumerate(actions) if not a["tried"]]
    if index is not None and not (loop_breaker and actions[index]["tried"] and untried):
        return index, False
    chosen = untried[0] if untried else 0
    ctx.trace.update_node(choice.node, override={"chosen": actions[chosen]["text"],
                                                 "reason": "unparsable reply" if index is None
                                                 else "repeated action in the same state"})
    return chosen, True


_ROOMS = (re.compile(r"You are in the ([^.]+)\."), re.compile(r"called the ([^.]+)\."))  # TWX, ScienceWorld


def room_of(observation: Observation) -> str:
    """Where the agent stands: the environment's ``room`` where it reports one, else the room its description names
    (TWX "You are in the kitchen.", ScienceWorld "This room is called the kitchen."), else ''."""
    if observation.info.get("room"):
        return str(observation.info["room"])
    look = str(observation.info.get("look", ""))
    for pattern in _ROOMS:
        match = pattern.search(look)
        if match:
            return match.group(1)
    return ""


class TWXScaffoldedProgram:
    name = "twx_scaffolded"

    def __init__(self, benchmark=None, *, history_steps: int = 8, max_actions: int | None = None,
                 loop_breaker: bool = True, history_obs_chars: int = 160, answer: str = "number",
                 robust_confirm: bool = True, knowledge: GameKnowledge | None = None):
        """``answer="text"`` lists the actions without numbers and asks for the action's text (``twx_react_text``),
        for agents whose numbered replies are dominated by a few list positions (see ``scripts/agent_reply_stats.py``).
        ``robust_confirm=False`` asks the confirm module once, with one option order (see ``confirm_action``).
        ``knowledge`` replaces the benchmark's entry in ``nlgrad.programs.game_knowledge``."""
        if answer not in ("number", "text"):
            raise ValueError(f"answer must be 'number' or 'text', not {answer!r}")
        self.benchmark = benchmark
        self.knowledge = knowledge if knowledge is not None else knowledge_for(benchmark)
        self.history_steps = history_steps
        bound = max_actions if max_actions is not None else self.knowledge.max_actions
        self.max_actions = bound if bound is not None else DEFAULT_MAX_ACTIONS
        self.loop_breaker = loop_breaker
        # Where the program's view of the game chooses and orders the list (ScienceWorld), that order is kept.
        self.match_words = self.knowledge.view is None
        self.history_obs_chars = history_obs_chars
        template = program_template("twx_act.j2")
        self.answer_text = answer == "text"
        self.act = Module(route=ROUTE, template=template, role="agent", parser=parse_choice,
                          max_tokens=24 if self.answer_text else 6, stop=["\n"], template_name="twx_act.j2")
        # Games whose readable things pose math problems (twx/arithmetic) get the solve module and calculator.
        self.solves_math = bool(self.knowledge.math_problems)
        self.solve = Module(route=SOLVE_ROUTE, template=program_template("twx_solve.j2"), role="agent",
                            parser=parse_expression, max_tokens=32,
                            template_name="twx_solve.j2") if self.solves_math else None
        # Games with irreversible action families (cooking's "cook X in ...", sciworld's "focus on ...") get the
        # confirm module (see nlgrad.programs.irreversible).
        self.irreversible = tuple(self.knowledge.irreversible)
        self.robust_confirm = robust_confirm
        # Action kinds that never move a game forward (cooking: "put ...") are listed last.
        self.low_priority = LOW_PRIORITY_PREFIXES + tuple(self.knowledge.low_priority)
        self.confirm = Module(route=CONFIRM_ROUTE, template=program_template("twx_confirm.j2"), role="agent",
                              parser=parse_confirmation, max_tokens=6, stop=["\n"],
                              template_name="twx_confirm.j2") if self.irreversible else None
    @property
    def routes(self) -> list[str]:
        return [ROUTE] + [SOLVE_ROUTE] * self.solves_math + [CONFIRM_ROUTE] * bool(self.irreversible)

    def confirm_action(self, ctx: RunContext, after: Output, action: str, family: list[str], task_text: str,
                       read_text: str, shown: list[dict[str, Any]], tried_here: set[str],
                       settled: tuple[str, ...] | list[str] = ()) -> tuple[str, list[Output]]:
        """The action to play instead of ``action``, an irreversible one of ``family``, and the confirm outputs that
        decided it (the environment step is their child: the played action depends on every answer).
        The confirm module is asked with the options in each of :func:`confirm_orders` (the first only, without
        ``robust_confirm``); a family action is played only when every answer names it. Otherwise ("none of
        these", answers that differ, an unparsable one) the family is set aside in this state (marked tried) and the
        first untried shown action that is in no irreversible family, or is ``settled``, is played; only when there is
        none is the act's pick played unconfirmed. The choice is recorded on the last confirm node."""
        orders = confirm_orders(family)[:2 if self.robust_confirm else 1]
        replies = [ctx.call(self.confirm, after=[after], task=task_text, read_text=clip(read_text, 600),
                            options=options) for options in orders]
        answers = [r.value["action"] for r in replies]
        agreed = agreed_choice(answers)
        picked = agreed
        if agreed is None or agreed == NONE_OF_THESE:
            tried_here.update(a for a in family if a not in settled)
            others = [a["text"] for a in shown if a["text"] not in tried_here
                      and (a["text"] in settled or not is_irreversible(a["text"], self.irreversible))]
            picked = others[0] if others else action
        if picked != action:
            reason = ("confirmation of an irreversible action" if agreed is not None
                      else "irreversible action not confirmed: the answers differ or one is unparsable")
            ctx.trace.update_node(replies[-1].node, override={"chosen": picked, "instead_of": action,
                                                              "answers": answers, "reason": reason})
        return picked, replies

    def solve_problem(self, ctx: RunContext, text: str, after: Output) -> tuple[str, str] | None:
        """``(calculation, answer)`` for the math problem in ``text`` (the solve module writes the expression, the
        calculator tool evaluates it), or None when there is none or the expression does not evaluate (the error is
        on the tool's trace node)."""
        problem = math_problem(text)
        if not problem:
            return None
        expression = ctx.call(self.solve, after=[after], problem=problem)
        try:
            result = ctx.tool("calculator", calculate, after=[expression], expression=expression)
        except ValueError:
            return None
        return f"{expression.value} = {result.value}", result.value

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        obs_out = ctx.env_reset()
        obs: Observation = obs_out.value
        task_text = obs.info.get("task", "")
        view = self.knowledge.view(task_text) if self.knowledge.view else None  # chooses and orders the list
        listed, settled = view.observe(obs) if view else (sorted(obs.valid_actions), [])
        tried: dict[str, set[str]] = defaultdict(set)
        lowered: set[str] = set()  # actions that would lower the score, in any state (see note_outcome)
        fruitless: set[str] = set()  # actions played (in any state) without raising the score
        read_text = ""  # what the latest "read ..." action showed (a recipe): ranks the actions it names first
        calculation, answer = "", ""  # the latest math problem read, solved (see solve_problem)
        visited: list[str] = []
        history: list[dict[str, str]] = []
        last_action, prev = "", obs_out
        step_cap = ctx.step_cap or 50
        overrides = 0
        while ctx.episode is not None and not ctx.episode.done:
            room = room_of(obs)
            if room and room not in visited:
                visited.append(room)
            state = obs.info.get("state_key", obs.text)
            ranked = rank_actions(listed, task_text, tried[state], lowered, read_text, fruitless,
                                  self.match_words, answer, self.low_priority)
            actions = shown_actions(ranked, self.max_actions, low_priority=self.low_priority)
            if not actions:
                break
            if ctx.steps_left == 0:  # no step left: do not pay for an action that cannot be played
                ctx.episode.stopped_by_cap = True
                break
            inputs = {"task": task_text, "last_action": last_action,
                      "observation": obs.text, "visited": visited or ["(none yet)"], "step": ctx.episode.steps + 1,
                      "step_cap": step_cap, "actions": actions}
            if self.answer_text:  # only then: the numbered prompt and its cache keys are unchanged
                inputs["answer_text"] = True
            if calculation:  # only then: prompts without a calculation and their cache keys are unchanged
                inputs["calculation"] = calculation
            if obs.info.get("free_text_verbs"):  # only then: other environments' prompts and cache keys are unchanged
                inputs["free_verbs"] = list(obs.info["free_text_verbs"])
            choice = ctx.call(self.act, after=[prev], history=list(history), **inputs)
            free = choice.value["action"] if choice.value.get("match") == "free" else None
            if free is not None and not (self.loop_breaker and free in tried[state]
                                         and any(not a["tried"] for a in actions)):
                action = free  # not a listed action, but the environment parses it (see action_reply.free_form_action)
            else:  # (a repeated free-form action is overridden like an unparsable reply)
                chosen, overridden = pick_action(ctx, choice, actions, self.loop_breaker)
                overrides += overridden
                action = actions[chosen]["text"]
            decided_by = [choice]  # the outputs the played action depends on: the environment step's parents
            family = family_of(action, listed, self.irreversible)  # [] without irreversible patterns
            # (``settled``: irreversible, but the task's own words name them)
            if family and action not in settled:
                action, decided_by = self.confirm_action(ctx, choice, action, family, task_text, read_text, actions,
                                                         tried[state], settled)
            tried[state].add(action)
            history += [{"role": "user", "content": clip(obs.text, self.history_obs_chars)},
                        {"role": "assistant", "content": action}]
            if len(history) > 2 * self.history_steps:  # drop the older half in one block (prefix changes rarely)
                history = history[2 * (self.history_steps // 2):]
            try:
                prev = ctx.env_step(action, after=decided_by)
            except StepCapReached:
                break
            obs, last_action = prev.value.observation, action
            listed, settled = view.observe(obs, action) if view else (sorted(obs.valid_actions), [])
            note_outcome(lowered, action, prev.value.reward)
            (fruitless.add if prev.value.reward <= 0 else fruitless.discard)(action)
            reading = view.reading if view else ""  # a measurement of the task's thing: sciworld's thermometer
            if action.startswith("read ") or reading:
                read_text = reading or obs.text
                solved = self.solve_problem(ctx, read_text, prev) if self.solves_math else None
                calculation, answer = solved or (calculation, answer)
        return {"actions": ctx.episode.actions if ctx.episode else [], "overrides": overrides, "visited": visited,
                **({"calculation": calculation} if self.solves_math else {})}


class TWXScaffoldedTextProgram(TWXScaffoldedProgram):
    """``twx_scaffolded`` answering with the action's text instead of its list number (see ``answer``)."""

    name = "twx_react_text"

    def __init__(self, benchmark=None, **options):
        super().__init__(benchmark, **{"answer": "text", **options})
