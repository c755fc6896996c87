"""Sandboxed jinja2 rendering for module prompts.

Templates are trusted source shipped with a program; everything else (task data, policy text, history) is passed in
as *data* and is never compiled as template source, so ``{{ ... }}`` inside a policy entry or a task stays literal.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from nlgrad.errors import NlgradError


class TemplateError(NlgradError):
    pass


_ENV = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False,
                                     trim_blocks=True, lstrip_blocks=True)


@lru_cache(maxsize=256)
def _compile(source: str, name: str):
    try:
        return _ENV.from_string(source)
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template {name}: syntax error at line {exc.lineno}: {exc.message}") from None


def load_template_source(path: str | Path) -> str:
    path = Path(path)
    if not path.is_file():
        raise TemplateError(f"template file not found: {path}")
    return path.read_text(encoding="utf-8")


def render_block(source: str, block: str, variables: dict[str, Any], *, name: str = "<template>") -> str:
    """Render one ``{% block NAME %}`` of a template with ``variables`` (all data, never source)."""
    template = _compile(source, name)
    if block not in template.blocks:
        raise TemplateError(f"template {name} has no block {block!r} (blocks: {sorted(template.blocks)})")
    try:
        context = template.new_context(dict(variables))
        return "".join(template.blocks[block](context)).strip()
    except UndefinedError as exc:
        raise TemplateError(f"template {name}, block {block!r}: {exc.message}") from None
    except SecurityError as exc:
        raise TemplateError(f"template {name}, block {block!r}: unsafe operation refused: {exc}") from None


def has_block(source: str, block: str, *, name: str = "<template>") -> bool:
    return block in _compile(source, name).blocks
