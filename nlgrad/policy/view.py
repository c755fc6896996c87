"""PolicyView: how a policy memory is shown to module calls, without changing the memory.

``whole=True`` shows every active entry to every call (conditions ignored): the baseline against which conditional
rendering is measured. ``placement`` says where a call's lessons go: ``"system"`` (the module template's policy slot,
the default), ``"input"`` (at the head of the user message, right before the task input, where a small model is more
likely to read them) or ``"demos"`` (``example`` entries become prior user / assistant turns of the conversation, the
way DSPy shows few-shot demos; the other entries stay in the policy slot). ``selector`` chooses the entries a conditional call sees (:mod:`nlgrad.policy.relevance`).
"""

from __future__ import annotations

from nlgrad.policy.relevance import EntrySelector
from nlgrad.policy.render import render_call_parts

PLACEMENTS = ("system", "input", "demos")


class PolicyView:
    def __init__(self, memory, *, whole: bool = False, placement: str = "system",
                 selector: EntrySelector | None = None):
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
        self.memory, self.whole, self.placement, self.selector = memory, whole, placement, selector

    def __getattr__(self, name):  # routes, active_entries, version, ... as the memory has them
        return getattr(self.memory, name)

    def shown_entries(self, route: str, for_input: str | None = None) -> list:
        return self.memory.shown_entries(route, None if self.whole else for_input, self.selector)

    def render(self, route: str, for_input: str | None = None) -> str:
        return self.memory.render(route, None if self.whole else for_input, self.selector)

    def render_shown(self, route: str, for_input: str | None) -> tuple[str, list[str]]:
        """The text a call with input ``for_input`` is given, and the ids of the entries it shows (one selection).
        With ``placement="demos"`` the text leaves out the examples shown as turns (:meth:`render_call`); the ids
        list every entry shown, turns included."""
        return self.render_call(route, for_input)[:2]

    def render_call(self, route: str, for_input: str | None) -> tuple[str, list[str], list[tuple[str, str]]]:
        """:meth:`render_shown` and the ``(user, assistant)`` turns of the ``example`` entries the call is shown
        (``placement="demos"``, or a policy that shows its examples as turns), all from one selection."""
        as_turns = self.placement == "demos" or self.memory.examples_as_turns
        return render_call_parts(self.shown_entries(route, for_input), as_turns)

    def demos(self, route: str, for_input: str | None) -> list[tuple[str, str]]:
        """The ``(user, assistant)`` turns a call is shown (see :meth:`render_call`)."""
        return self.render_call(route, for_input)[2]
