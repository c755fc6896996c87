"""Method options: ``--method-option`` parsing, and checks against what each method's constructor accepts.

A method's options are the keyword arguments of its class (found by :mod:`nlgrad.methods.registry`), e.g. ``JERP(k=4, capacity=16, ...)``;
a subclass that takes ``**options`` inherits its parent's. On the command line:

* ``nlgrad optimize --method jerp --method-option k=3 --method-option gate=none`` (``NAME=VALUE``; the prefixed
  form ``jerp.k=3`` is accepted too, so lines can be copied from ``nlgrad compare``, but its method must be
  ``--method``);
* ``nlgrad compare --methods nlpg,jerp --method-option jerp.k=3`` (``METHOD.NAME=VALUE``: several methods run).

A value is read as JSON when it parses (``3``, ``0.5``, ``true``, ``null``, ``["a", "b"]``, ``{"add": 1.0}``), else
kept as the plain string (``gate=none``, ``embedder=lexical``), then checked against the option's annotation
(lax: ``"True"`` -> ``True``). An unknown name is an error that lists the method's options.
"""

from __future__ import annotations

import inspect
import json
import typing
from typing import Any, Callable, Iterable

from pydantic import ConfigDict, TypeAdapter, ValidationError

from nlgrad.errors import ConfigError

FLAG = "--method-option"
VALUE_HINT = 'values are JSON (3, 0.5, true, null, ["a"]) or plain strings'


class MethodOptionError(ConfigError, ValueError):
    """A method option that the method does not have, or a value its annotation rejects."""


def parse_value(text: str) -> Any:
    """JSON when ``text`` parses as JSON, else ``text`` itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def split_option(item: str) -> tuple[str | None, str, Any]:
    """``"k=3"`` -> ``(None, "k", 3)``; ``"jerp.k=3"`` -> ``("jerp", "k", 3)``."""
    key, sep, value = item.partition("=")
    method, dot, name = key.strip().rpartition(".")
    if not sep or not name or (dot and not method):
        raise MethodOptionError("a method option looks like NAME=VALUE or METHOD.NAME=VALUE", field=FLAG,
                                value=item)
    return (method or None), name, parse_value(value)


def method_class(method: str) -> type | None:
    """The class behind ``--method`` (None when its module cannot be imported here: nothing to check against)."""
    from nlgrad.methods.registry import method_class as registered_class

    return registered_class(method)


def option_parameters(cls: type) -> dict[str, tuple[inspect.Parameter, Any]]:
    """name -> (parameter, resolved annotation or None) for every keyword argument of ``cls`` (through ``**``)."""
    out: dict[str, tuple[inspect.Parameter, Any]] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            hints = typing.get_type_hints(init)
        except Exception:  # noqa: BLE001 - an unresolvable annotation only disables the type check
            hints = {}
        params = inspect.signature(init).parameters.values()
        for p in params:
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self":
                out.setdefault(p.name, (p, hints.get(p.name)))
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return out


def known_options(method: str) -> list[str] | None:
    cls = method_class(method)
    return None if cls is None else sorted(option_parameters(cls))


def _coerce(method: str, name: str, value: Any, annotation: Any) -> Any:
    if annotation is None:
        return value
    try:
        adapter = TypeAdapter(annotation, config=ConfigDict(arbitrary_types_allowed=True))
    except Exception:  # noqa: BLE001 - a type pydantic cannot describe: the method checks it itself
        return value
    try:
        coerced = adapter.validate_python(value)
    except ValidationError as exc:
        wanted = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
        raise MethodOptionError(f"option {name!r} of method {method!r} expects {wanted} "
                                f"({exc.errors()[0]['msg']}; {VALUE_HINT})", field=FLAG,
                                value=f"{name}={json.dumps(value)}") from None
    except Exception:  # noqa: BLE001 - e.g. isinstance on a non-runtime protocol: leave it to the method
        return value
    try:
        json.dumps(coerced)
    except (TypeError, ValueError):
        return value
    return coerced


def check_method_options(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with values coerced to the annotations of ``method``'s constructor; an unknown name or a value
    of the wrong type raises :class:`MethodOptionError` naming the option, the method and its known options."""
    if not options:
        return {}
    cls = method_class(method)
    if cls is None:
        return dict(options)
    params = option_parameters(cls)
    out = {}
    for name, value in options.items():
        if name not in params:
            known = ", ".join(sorted(params)) or "(none)"
            raise MethodOptionError(f"unknown option {name!r} for method {method!r}; its options: {known}",
                                    field=FLAG, value=name)
        out[name] = _coerce(method, name, value, params[name][1])
    return out


def parse_method_options(items: Iterable[str], *, method: str) -> dict[str, Any]:
    """``optimize``: ``NAME=VALUE`` (or ``METHOD.NAME=VALUE`` with METHOD = ``method``), checked; last one wins."""
    options: dict[str, Any] = {}
    for item in items:
        prefix, name, value = split_option(item)
        if prefix is not None and prefix != method:
            raise MethodOptionError(f"this option is for method {prefix!r} but --method is {method!r}",
                                    field=FLAG, value=item)
        options[name] = value
    return check_method_options(method, options)


def parse_compare_options(items: Iterable[str], *, methods: list[str],
                          check: Callable[[str, dict[str, Any]], dict[str, Any]] = check_method_options,
                          ) -> dict[str, dict[str, Any]]:
    """``compare``: ``METHOD.NAME=VALUE`` for one of ``methods``, checked per method by ``check`` (default: against
    the method's constructor; ``nlgrad compare`` also checks its trainer rows' options); last one wins."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        prefix, name, value = split_option(item)
        if prefix is None:
            raise MethodOptionError("with several methods, a method option looks like METHOD.NAME=VALUE "
                                    "(e.g. jerp.k=3)", field=FLAG, value=item)
        if prefix not in methods:
            raise MethodOptionError(f"this option is for method {prefix!r}, which is not in --methods "
                                    f"({', '.join(methods)})", field=FLAG, value=item)
        out.setdefault(prefix, {})[name] = value
    return {method: check(method, options) for method, options in out.items()}
