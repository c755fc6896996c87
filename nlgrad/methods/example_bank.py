"""Worked examples as policy entries: what the example-learning methods and baselines share.

A program that can say what each of its routes should have replied for a task (``reference_outputs(task) ->
{route: output}``; the intent programs derive it from the gold label) lets a method write *example* entries: the
route's input for that task, with the right output (:func:`nlgrad.policy.examples.format_example`). A policy of
examples records the ``examples`` selection (:func:`example_selection`): each call is shown the ``k`` examples whose
input is nearest its own, as prior user / assistant turns after the fixed system prompt
(:mod:`nlgrad.policy.example_selection`).

Used by ``random_examples`` (n train examples drawn at random: the control), ``knn_fewshot`` (every train example:
the unbounded reference) and NLPG's confusion examples (:mod:`nlgrad.methods.nlpg.confusion_examples`).
"""

from __future__ import annotations

from typing import Any

from nlgrad.errors import ConfigError
from nlgrad.policy import AddOp, EntryKind, PolicyBounds, PolicyMemory, UpdateProvenance, apply_update
from nlgrad.policy.examples import format_example
from nlgrad.policy.schema import PolicyEntry, Provenance, Selection
from nlgrad.runtime.protocols import Task

EXAMPLES_PER_CALL = 8


def example_selection(k: int = EXAMPLES_PER_CALL, embedder: str = "auto") -> Selection:
    return Selection(kind="examples", k=k, examples_as="turns", embedder=embedder)


def example_bounds(max_examples: int, *, per_update: int | None = None) -> PolicyBounds:
    """Bounds for a route that holds up to ``max_examples`` examples (each call sees only ``k`` of them): the entry
    and token bounds make room for the examples, ``per_update`` adds at most (default: all of them)."""
    per_update = per_update or max(1, max_examples)
    return PolicyBounds(max_examples_per_route=max_examples, max_entries_per_route=max_examples + 12,
                        max_tokens_per_route=max(400, 120 * (max_examples + 12)), max_ops_per_update=per_update,
                        max_edit_cost=max(160, 200 * per_update), dedupe_threshold=1.0)


def with_example_room(bounds: PolicyBounds, max_examples: int, per_update: int) -> PolicyBounds:
    """``bounds`` (the lessons' bounds) widened to hold ``max_examples`` examples beside the lessons and to add up to
    ``per_update`` of them in one update."""
    return bounds.model_copy(update={
        "max_examples_per_route": max_examples,
        "max_entries_per_route": bounds.max_entries_per_route + max_examples,
        "max_tokens_per_route": bounds.max_tokens_per_route + 120 * max_examples,
        "max_ops_per_update": bounds.max_ops_per_update + per_update,
        "max_edit_cost": bounds.max_edit_cost + 200 * per_update})


def held_examples(memory: PolicyMemory) -> int:
    """The most example entries any route of ``memory`` holds (the room :func:`with_example_room` must keep)."""
    return max((sum(e.kind == EntryKind.example for e in memory.active_entries(r)) for r in memory.routes()), default=0)


def reference_outputs(program, task: Task) -> dict[str, Any]:
    """``program.reference_outputs(task)``, or a ConfigError naming the program when it cannot give them."""
    method = getattr(program, "reference_outputs", None)
    if method is None:
        raise ConfigError("example methods need a program that says what each route should reply for a task "
                          "(a `reference_outputs(task)` method, as the intent programs have)",
                          field="--program", value=getattr(program, "name", type(program).__name__))
    return method(task)


def route_input(task: Task) -> dict[str, Any]:
    """What an example shows as a route's input: the task's inputs (the intent programs' modules read the message)."""
    return dict(task.inputs)


def example_ops(program, tasks: list[Task], *, reason: str, routes: list[str] | None = None) -> list[AddOp]:
    """One ``add`` of an example entry per (task, route): the task's input and the route's reference output."""
    ops = []
    for task in tasks:
        for route, output in reference_outputs(program, task).items():
            if routes is None or route in routes:
                ops.append(AddOp(route=route, kind=EntryKind.example, text=format_example(route_input(task), output),
                                 reason=reason, trace_ids=[task.id]))
    return ops


def with_examples(memory: PolicyMemory, ops: list[AddOp], *, source: str, max_examples: int, iteration: int = 0,
                  k: int = EXAMPLES_PER_CALL, embedder: str = "auto") -> tuple[PolicyMemory, Any]:
    """``memory`` plus the examples of ``ops`` (through :func:`apply_update`, under :func:`example_bounds`), with the
    ``examples`` selection recorded. Returns ``(new memory, update report)``."""
    start = memory.model_copy(update={"selection": example_selection(k, embedder)})
    return apply_update(start, ops, example_bounds(max_examples, per_update=len(ops) or 1),
                        UpdateProvenance(source=source, iteration=iteration))


def bank_memory(memory: PolicyMemory, program, tasks: list[Task], *, source: str, k: int = EXAMPLES_PER_CALL,
                embedder: str = "auto") -> PolicyMemory:
    """A memory holding one example per (task, route) for many tasks (the whole train split), built in one pass:
    :func:`apply_update` compares each add with every entry of its route, which is quadratic in the bank's size.
    The entries are the same as :func:`example_ops` would add, numbered in task order."""
    by_route: dict[str, list[PolicyEntry]] = {}
    for task in tasks:
        for route, output in reference_outputs(program, task).items():
            entries = by_route.setdefault(route, [])
            entries.append(PolicyEntry(id=f"{route}#{len(entries) + 1}", kind=EntryKind.example,
                                       text=format_example(route_input(task), output),
                                       provenance=Provenance(source=source, iteration=0, trace_ids=[task.id])))
    return PolicyMemory(program=memory.program, benchmark=memory.benchmark, method=source,
                        parent=memory.version or None, selection=example_selection(k, embedder), routes=by_route,
                        n_ops=sum(len(v) for v in by_route.values()))
