"""The methods' own LM calls as modules: a jinja2 template from ``nlgrad/methods/templates/`` on a route and role."""

from __future__ import annotations

from importlib.resources import files

from nlgrad.runtime.module import Module


def method_module(template: str, route: str, role: str = "optimizer") -> Module:
    """``template`` (a file name in ``templates/``) rendered for ``route`` and played by ``role``."""
    source = files("nlgrad.methods").joinpath(f"templates/{template}").read_text(encoding="utf-8")
    return Module(route=route, template=source, role=role, template_name=template)
