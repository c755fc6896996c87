"""``twx_react``: the earlier name of the scaffolded TextWorldExpress/ScienceWorld program, kept so that policy files,
run directories and code that name it keep working. The program is :mod:`nlgrad.programs.twx_scaffolded`; this
alias differs only in its ``name`` (what policy files and run configs record). The plain ReAct program, without the
scaffolding, is :mod:`nlgrad.programs.react_plain`.
"""

from __future__ import annotations

from nlgrad.programs.action_reply import free_form_action, match_action, match_action_text, parse_choice
from nlgrad.programs.twx_scaffolded import (CONSUME_PREFIXES, DEFAULT_MAX_ACTIONS, LOW_PRIORITY_PREFIXES, ROUTE,
                                            SOLVE_ROUTE, TWXScaffoldedProgram, TWXScaffoldedTextProgram,
                                            consumes_unnamed, math_problem, note_outcome, parse_expression,
                                            pick_action, rank_actions, room_of, shown_actions)

__all__ = ["CONSUME_PREFIXES", "DEFAULT_MAX_ACTIONS", "LOW_PRIORITY_PREFIXES", "ROUTE", "SOLVE_ROUTE",
           "TWXReActProgram", "TWXReActTextProgram", "consumes_unnamed", "free_form_action", "match_action",
           "match_action_text", "math_problem", "note_outcome", "parse_choice", "parse_expression", "pick_action",
           "rank_actions", "room_of", "shown_actions"]


class TWXReActProgram(TWXScaffoldedProgram):
    """:class:`~nlgrad.programs.twx_scaffolded.TWXScaffoldedProgram` under its earlier name."""

    name = "twx_react"


TWXReActTextProgram = TWXScaffoldedTextProgram  # registered as twx_react_text, its name
