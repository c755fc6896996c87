"""Find optimization methods by name, as :mod:`nlgrad.runtime.registry` finds benchmarks and programs.

Built-ins are listed in ``nlgrad.methods.CATALOG`` (dotted ``module:Class`` strings, imported lazily); an installed
package adds more through the entry-point group ``nlgrad.methods``, e.g. in its ``pyproject.toml``::

    [project.entry-points."nlgrad.methods"]
    mymethod = "my_package.my_method:MyMethod"

A built-in name wins over an entry point of the same name. The class is called with the run's ``method_options``
as keyword arguments and must satisfy :class:`nlgrad.methods.base.Method`.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from nlgrad.errors import ConfigError

GROUP = "nlgrad.methods"


def method_catalog() -> dict[str, str]:
    """name -> ``module:Class`` for every method: the built-ins, then the entry points of ``nlgrad.methods``."""
    from nlgrad.methods import CATALOG

    catalog = dict(CATALOG)
    for ep in entry_points(group=GROUP):
        catalog.setdefault(ep.name, ep.value)
    return catalog


def method_names() -> list[str]:
    return sorted(method_catalog())


def method_target(name: str) -> str:
    """The ``module:Class`` behind ``--method name``; an unknown name is a ConfigError listing the known ones."""
    catalog = method_catalog()
    if name not in catalog:
        raise ConfigError(f"unknown method; known: {', '.join(sorted(catalog))}", field="--method", value=name)
    return catalog[name]


def import_method_class(name: str) -> type:
    """The class behind ``--method name``; a ConfigError when its own module is missing from this installation
    (an import error inside that module propagates: it is a bug, not a missing extra)."""
    module_name, _, attr = method_target(name).partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise ConfigError("this method is not available in this installation", field="--method", value=name) from None
    return getattr(module, attr)


def method_class(name: str) -> type | None:
    """The class behind ``--method name``, or None when it cannot be imported here (nothing to check options
    against); an unknown name is a ConfigError."""
    module_name, _, attr = method_target(name).partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except ImportError:
        return None


def declared(name: str, attribute: str, default: Any = None) -> Any:
    """What the method ``name`` declares on its class (``one_shot``, ``budget_option``, ``reference``, ...);
    ``default`` when ``name`` is no method here (a trainer row, an unknown name) or cannot be imported."""
    try:
        cls = method_class(name)
    except ConfigError:
        return default
    return getattr(cls, attribute, default) if cls is not None else default


def load_method(name: str, options: dict[str, Any]):
    """An instance of the method ``name`` built with ``options`` as keyword arguments."""
    return import_method_class(name)(**options)
