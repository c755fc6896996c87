"""Inject a policy into a DSPy program: each predictor's instructions get its route's delimited policy block."""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from nlgrad.policy.blocks import apply_block, remove_block


class RendersPolicy(Protocol):
    def render(self, route: str) -> str: ...


def inject_into_dspy(program: Any, memory: RendersPolicy, route_map: Mapping[str, str] | None = None) -> dict[str, str]:
    """Append each predictor's policy to ``predictor.signature.instructions``, idempotently.

    ``route_map`` maps predictor names (as in ``program.named_predictors()``) to routes; predictors it does not
    name are left alone. Without it every predictor uses its own name as the route. A previously injected block of
    the route is replaced; a route with no active entries has its block removed. Returns ``{predictor: route}`` for
    the predictors visited. No LM is called and ``dspy`` need not be imported by the caller.
    """
    version = getattr(memory, "version", None)
    visited: dict[str, str] = {}
    for name, predictor in program.named_predictors():
        if route_map is not None:
            if name not in route_map:
                continue
            route = route_map[name]
        else:
            route = name
        signature = predictor.signature
        instructions = signature.instructions or ""
        body = memory.render(route)
        if body:
            instructions_new = apply_block(instructions, route, body, version)
        else:
            instructions_new = remove_block(instructions, route)
        if instructions_new != instructions:
            predictor.signature = signature.with_instructions(instructions_new)
        visited[name] = route
    return visited
