"""Validation task selectors: which dev tasks the shared gate scores a candidate policy on.

``first`` (the default) is the first ``--val`` dev tasks for every candidate. ``reach`` is, for each candidate, the
dev tasks whose prompt it changes, up to ``--val`` of them in dev order. A conditional lesson (an entry with
``match`` patterns) reaches only the inputs it concerns; on the first ``--val`` tasks it may reach a handful, whose
effect the rest dilute to below the gate's margin and whose interval can never exclude 0. On the tasks it reaches,
the paired difference measures the lesson itself. A task is reached when the policy text rendered for its input
differs between the current and the candidate policy on some route; the input is the task's inputs as one text
(what a single-call program's module matches against; in a multi-step program later calls see other text, so there
``reach`` is an approximation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Protocol

from nlgrad.runtime.protocols import Task

if TYPE_CHECKING:
    from nlgrad.policy import PolicyMemory


class ValidationTasks(Protocol):
    """Contract: the dev tasks (never test tasks) to score ``current`` and ``candidate`` on, the same for both, and
    deterministic for the same policies. ``first`` is the first ``limit`` dev tasks, ``dev`` gives the whole dev
    split (called only by a selector that needs it), ``routes`` are the program's routes."""

    name: str

    def select(self, current: "PolicyMemory", candidate: "PolicyMemory", *, first: list[Task],
               dev: Callable[[], list[Task]], routes: list[str], limit: int) -> list[Task]: ...


def task_text(task: Task) -> str:
    """A task's inputs as one text (values joined by newlines, the way module call inputs are matched)."""
    return "\n".join(str(v) for v in task.inputs.values())


def reaches(current: "PolicyMemory", candidate: "PolicyMemory", task: Task, routes: Iterable[str]) -> bool:
    """Whether ``candidate`` renders other policy text than ``current`` for ``task``'s input on some route."""
    text = task_text(task)
    return any(current.render(route, text) != candidate.render(route, text) for route in routes)


class FirstDevTasks:
    """The first ``--val`` dev tasks, whatever the candidate."""

    name = "first"

    def select(self, current: "PolicyMemory", candidate: "PolicyMemory", *, first: list[Task],
               dev: Callable[[], list[Task]], routes: list[str], limit: int) -> list[Task]:
        return first


class ReachedDevTasks:
    """The dev tasks whose prompt the candidate changes, at most ``limit`` of them, in dev order."""

    name = "reach"

    def select(self, current: "PolicyMemory", candidate: "PolicyMemory", *, first: list[Task],
               dev: Callable[[], list[Task]], routes: list[str], limit: int) -> list[Task]:
        return [t for t in dev() if reaches(current, candidate, t, routes)][:limit]


SELECTORS: dict[str, type] = {"first": FirstDevTasks, "reach": ReachedDevTasks}
