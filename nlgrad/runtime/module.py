"""A Module is a named route: a jinja2 prompt template, a policy slot, an LM role and an output parser."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from nlgrad.runtime.templates import has_block, load_template_source, render_block

Parser = Callable[[str, dict[str, Any]], Any]


def identity_parser(text: str, inputs: dict[str, Any]) -> str:  # noqa: ARG001 - parser signature
    return text.strip()


INPUT_LESSONS_HEADER = "Lessons for this request:"


@dataclass
class Module:
    """One LM call site. The template has a ``system`` and a ``user`` block; ``policy`` is available to both.

    Messages are ``[system] + history + [user]``: system (with the policy) comes first and history is
    append-only, so a local server's prefix cache can reuse most of the prompt across the steps of an episode.

    ``constants`` are template values fixed for the module (a label list): rendered like inputs, but not a call's
    input, so they are neither recorded per call nor matched against policy conditions. ``choices``, where given,
    are the only replies the module accepts: a server that takes a decoding grammar is sent
    :meth:`response_format` (the reply is then one choice as a JSON string); the parser still maps any other reply.
    """

    route: str
    template: str
    role: str = "agent"
    parser: Parser = identity_parser
    temperature: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    template_name: str = field(default="")
    constants: dict[str, Any] = field(default_factory=dict)
    choices: list[str] | None = None

    def __post_init__(self) -> None:
        if not self.template_name:
            self.template_name = self.route
        for block in ("system", "user"):
            if not has_block(self.template, block, name=self.template_name):
                from nlgrad.runtime.templates import TemplateError

                raise TemplateError(f"template {self.template_name} needs a {{% block {block} %}}")

    @classmethod
    def from_file(cls, route: str, path: str | Path, **kwargs: Any) -> "Module":
        return cls(route=route, template=load_template_source(path), template_name=str(path), **kwargs)

    def render(self, policy: str, inputs: dict[str, Any], history: list[dict[str, str]] | None = None,
               placement: str = "system", demos: list[tuple[str, str]] | None = None) -> list[dict[str, str]]:
        """``placement="input"`` leaves the template's policy slot empty and puts the lessons at the head of the user
        message, right before the task input (the template's closing cue, such as ``Answer:``, stays last).
        ``demos`` (``(user, assistant)`` pairs, the ``demos`` placement's worked examples) come as prior turns right
        after the system message; the lessons stay in the policy slot."""
        in_slot = placement in ("system", "demos")
        variables = {**self.constants, **inputs, "policy": (policy or "") if in_slot else ""}
        system = render_block(self.template, "system", variables, name=self.template_name)
        user = render_block(self.template, "user", variables, name=self.template_name)
        if not in_slot and policy:
            user = f"{INPUT_LESSONS_HEADER}\n{policy}\n\n{user.lstrip()}"
        turns = [{"role": role, "content": text} for user, reply in (demos or [])
                 for role, text in (("user", user), ("assistant", self.demo_reply(reply)))]
        return [{"role": "system", "content": system}, *turns, *(history or []), {"role": "user", "content": user}]

    def demo_reply(self, reply: str) -> str:
        """A worked example's reply as this module replies: a module with ``choices`` replies a JSON string (what
        :meth:`response_format` constrains it to), so its examples' replies are shown the same way."""
        return json.dumps(reply, ensure_ascii=False) if self.choices else reply

    def response_format(self) -> dict[str, Any] | None:
        """The JSON schema that constrains a reply to one of ``choices`` (None without choices)."""
        if not self.choices:
            return None
        return {"type": "json_object", "schema": {"type": "string", "enum": list(self.choices)}}

    def parse(self, text: str, inputs: dict[str, Any]) -> Any:
        return self.parser(text, inputs)


def route_modules(program) -> dict[str, Module]:
    """``{route: Module}`` for the modules a program holds as attributes (the first one of each route)."""
    found: dict[str, Module] = {}
    for value in vars(program).values():
        route = getattr(value, "route", None)
        if route and hasattr(value, "template"):
            found.setdefault(route, value)
    return found


def route_instructions(program, route: str, *, with_constants: bool = False) -> str:
    """The static instructions of a route's module: its ``system`` block rendered with an empty policy ("" when the
    program holds no module for the route, or the block needs task variables).

    ``with_constants`` renders the module's ``constants`` too (a label list): the whole fixed system text, which is
    what a prompt optimizer rewrites (the baselines' seed). Without them (the default) a block that needs a constant
    gives "": nlgrad's own methods compare learned entries with the instructions' prose, and a label list there
    would make every worked example look like a copy of the instructions."""
    module = route_modules(program).get(route)
    if module is None:
        return ""
    variables = {**(module.constants if with_constants else {}), "policy": ""}
    try:
        return render_block(module.template, "system", variables, name=route)
    except Exception:  # noqa: BLE001 - the system block may need task variables
        return ""
