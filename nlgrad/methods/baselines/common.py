"""What the prompt-optimizer baselines share: routes as text components, and their result as policy memory.

GEPA, MIPROv2 and TextGrad optimize *one text per module route* ("the instruction"). nlgrad keeps what is learned in
policy memory, which a module's template renders into its ``policy`` slot. The mapping, used by all three:

- **seed text** of a route (what the optimizer starts from): the text of the route's single ``rule`` entry if the
  starting policy holds exactly that (a baseline's own earlier result), else the rendered policy of the route if it
  has entries, else the module's static instructions (its template's ``system`` block rendered with an empty
  policy and the module's constants, such as a label list), so that the optimizer LM knows what the step does.
- **result**: every route whose optimized text differs from its seed text holds exactly **one entry of kind
  ``rule``** with the optimized text (the route's other active entries are deleted); a route whose text equals its
  seed keeps (or gets back) the starting policy's entries, so an unchanged seed made of static instructions adds
  nothing. The memory is built by :func:`nlgrad.policy.apply_update` like every other method's, so it is
  versioned, diffable and rendered into the same slot of the same templates. Baselines optimize free-form
  instructions, so their updates are applied under :data:`BASELINE_BOUNDS` (one instruction may be long) rather
  than nlgrad's per-update edit bounds.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from nlgrad.errors import ConfigError
from nlgrad.policy import AddOp, DeleteOp, EntryKind, PolicyBounds, PolicyMemory, UpdateProvenance, apply_update
from nlgrad.policy.schema import MAX_TEXT_CHARS
from nlgrad.runtime.module import route_instructions

BASELINE_BOUNDS = PolicyBounds(max_entries_per_route=12, max_tokens_per_route=4000, max_ops_per_update=64,
                               max_edit_cost=100_000, dedupe_threshold=1.0)
FALLBACK_INSTRUCTION = "Do this step of the task well."


def route_text(memory: PolicyMemory, route: str) -> str | None:
    """The text a baseline stored for ``route`` (its single rule entry), the rendered policy, or None if empty."""
    active = memory.active_entries(route)
    if not active:
        return None
    if len(active) == 1 and active[0].kind == EntryKind.rule and not active[0].when:
        return active[0].text
    return memory.render(route)


def seed_candidate(program, memory: PolicyMemory) -> dict[str, str]:
    """``{route: seed text}`` for every route of the program (see the module docstring)."""
    out: dict[str, str] = {}
    for route in program.routes:
        text = route_text(memory, route)
        out[route] = text if text is not None else (route_instructions(program, route, with_constants=True)
                                                       or FALLBACK_INSTRUCTION)
    return out


def memory_from_candidate(memory: PolicyMemory, candidate: dict[str, str], seed: dict[str, str], *, source: str,
                          iteration: int | None = None, initial: PolicyMemory | None = None
                          ) -> tuple[PolicyMemory, list[Any], Any]:
    """``memory`` changed so that each route holds the candidate's text; returns ``(memory, ops, report)``.

    A route whose candidate text differs from its seed text gets one ``rule`` entry with that text; a route whose
    text equals the seed is put back to the state of ``initial`` (the policy the optimizer started from; default
    ``memory``). Routes already in the wanted state get no operation."""
    initial = initial if initial is not None else memory
    ops: list[Any] = []
    for route in sorted(candidate):
        text = (candidate[route] or "").strip()[:MAX_TEXT_CHARS]
        if text == (seed.get(route) or "").strip()[:MAX_TEXT_CHARS]:
            if memory.render(route) == initial.render(route):
                continue
            wanted = [AddOp(route=route, text=e.text, when=e.when, kind=e.kind, reason="back to the seed")
                      for e in initial.active_entries(route)]
        else:
            if text == (route_text(memory, route) or ""):
                continue
            wanted = [AddOp(route=route, text=text, kind=EntryKind.rule, reason=f"{source} optimized instruction")]
        ops += [DeleteOp(id=e.id, reason=f"replaced by the {source} instruction") for e in
                memory.active_entries(route)]
        ops += wanted
    if not ops:
        return memory, [], None
    new, report = apply_update(memory, ops, BASELINE_BOUNDS, UpdateProvenance(source=source, iteration=iteration))
    return new, ops, report


def same_policy(a: PolicyMemory, b: PolicyMemory, routes: list[str]) -> bool:
    return all(a.render(r) == b.render(r) for r in routes)


def candidate_key(candidate: dict[str, str], task_ids: list[str]) -> str:
    """A short stable hash of (candidate texts, task ids): names rollout folders so re-evaluation resumes."""
    blob = json.dumps({"c": candidate, "t": task_ids}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def require(module_name: str, pip_name: str, method: str):
    """Import an optional library or raise a ConfigError that says how to install it."""
    import importlib

    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"method {method} needs the package {pip_name} ({exc}); install it with "
                          f"pip install 'nlgrad[baselines]'", field="--method", value=method) from None


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
