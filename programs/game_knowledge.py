"""The game knowledge of the scaffolded program (``twx_scaffolded``), per benchmark: kept in the program, not in the
benchmarks, whose environments only report what the game says.

Every entry is scaffolding: it is measured as part of the program's own floor (the program driven by a constant
reply, ``scripts/measure_benchmarks.py --variants alone``), and a learned policy's gain is judged against that floor.
The plain ReAct program (``react_plain``) uses none of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from nlgrad.programs.sciworld_knowledge import MAX_ACTIONS as SCIWORLD_MAX_ACTIONS
from nlgrad.programs.sciworld_knowledge import ScienceWorldView


@dataclass(frozen=True)
class GameKnowledge:
    """What the scaffolded program knows of one benchmark's games (every field's default means "nothing known").

    - ``irreversible``: regexes of action families that cannot be undone; a pick from one is checked by the confirm
      module (``nlgrad.programs.irreversible``).
    - ``low_priority``: action prefixes that never move the game forward: listed after every other kind.
    - ``math_problems``: what is read poses math problems (the solve module and the calculator).
    - ``max_actions``: how many actions the prompt lists (None: the program's own bound).
    - ``view``: builds, from the task text, a per-episode view that chooses and orders the listed actions and names
      the irreversible ones the task's words settle (ScienceWorld: :class:`ScienceWorldView`); the program then keeps
      that order instead of ranking by the task's words.
    """

    irreversible: tuple[str, ...] = ()
    low_priority: tuple[str, ...] = ()
    math_problems: bool = False
    max_actions: int | None = None
    view: Callable[[str], ScienceWorldView] | None = None


# TWX cooking: cooking an ingredient with an appliance, or cutting it in a way, that the recipe does not ask for
# loses the game; putting an ingredient down or away undoes a take that scored (the game is won by taking, cutting
# and cooking the recipe's ingredients, preparing the meal and eating it).
COOKING = GameKnowledge(irreversible=(r"cook (?P<obj>.+) in ", r"(?:slice|dice|chop) (?P<obj>.+)$"),
                        low_priority=("put ", "drop "))
# TWX arithmetic: the math problem it shows, once read, says which quantity to put in the box.
ARITHMETIC = GameKnowledge(math_problems=True)
# ScienceWorld: a wrong focus, or a move of the focused thing to the wrong box, ends the task at -100; the game lists
# 100-1500 actions, of which the view shows 20.
SCIWORLD = GameKnowledge(irreversible=(r"focus on ", r"move (?P<obj>.+) to (?:[a-z]+ )?box$"),
                         max_actions=SCIWORLD_MAX_ACTIONS, view=ScienceWorldView)

KNOWLEDGE: dict[str, GameKnowledge] = {"twx/cooking": COOKING, "twx/arithmetic": ARITHMETIC, "sciworld": SCIWORLD}


def knowledge_for(benchmark: object) -> GameKnowledge:
    """The knowledge for ``benchmark`` (by its id: an exact entry, else its family's), or none."""
    benchmark_id = str(getattr(benchmark, "id", "") or "")
    return KNOWLEDGE.get(benchmark_id) or KNOWLEDGE.get(benchmark_id.split("/")[0]) or GameKnowledge()
