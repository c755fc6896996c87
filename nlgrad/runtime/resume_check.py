"""What a resume must match, beyond the optimizer settings: the models and their sampling, the program, the policy.

A resume reads back finished rollouts and cached replies; if the agent model, its temperature or max_tokens, or the
program changed in between, the run would mix two experiments under one name. ``optimize`` keeps these in
``run/identity.json``; ``eval --run-dir`` compares them with the saved ``config.json``. A mismatch is refused with
one line per changed field (``field: saved -> now``) before any work or write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nlgrad.config import Settings
from nlgrad.errors import ConfigError
from nlgrad.files import write_json_atomic

IDENTITY_NAME = "identity.json"
SAMPLING = ("model", "temperature", "max_tokens")  # what changes the replies (not where or how fast they come)
EVAL_KEYS = ("benchmark", "split", "program", "policy", "policy_version", "policy_loaded_version", "step_cap",
             "roles")
EVAL_ROLES = ("agent", "user_sim")


def role_identity(settings: Settings, roles: tuple[str, ...] | None = None) -> dict[str, dict[str, Any]]:
    """``{role: {model, temperature, max_tokens}}`` for ``roles`` (default: every configured role)."""
    names = roles if roles is not None else tuple(settings.roles)
    return {name: {key: getattr(settings.roles[name], key) for key in SAMPLING}
            for name in sorted(names) if name in settings.roles}


def differences(saved: Any, now: Any, prefix: str = "") -> list[str]:
    """``path: saved -> now`` for every leaf that differs (dicts compared key by key)."""
    if isinstance(saved, dict) and isinstance(now, dict):
        out: list[str] = []
        for key in sorted(set(saved) | set(now), key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            out += differences(saved.get(key, "<absent>"), now.get(key, "<absent>"), path)
        return out
    return [] if saved == now else [f"{prefix or '<root>'}: {saved!r} -> {now!r}"]


def _refuse(what: str, changes: list[str], *, field: str, value: str) -> ConfigError:
    shown = "; ".join(changes[:8]) + (f"; and {len(changes) - 8} more" if len(changes) > 8 else "")
    return ConfigError(f"{what} ({shown}); resume with the same models, sampling and program, or start a new "
                       "directory", field=field, value=value)


def check_identity(work_dir: Path, identity: dict[str, Any], *, resuming: bool, field: str = "--out",
                   value: str = "") -> None:
    """Refuse a resume whose ``identity`` differs from the saved one; save it on a fresh start (or the first resume
    of a run that predates the file)."""
    path = Path(work_dir) / IDENTITY_NAME
    if resuming and path.exists():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"the saved run identity is unreadable ({exc}); restore it or start a new directory",
                              source=str(path)) from None
        changes = differences(saved, identity)
        if changes:
            raise _refuse("this run was started with other models or another program", changes, field=field,
                          value=value or str(work_dir))
        return
    write_json_atomic(path, identity)


def _eval_view(config: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """The result-changing part of an eval config: ``EVAL_KEYS`` present in both (a run dir written before a key
    existed is not refused for lacking it), with only the roles an eval uses."""
    view = {k: config[k] for k in EVAL_KEYS if k in config and k in other}
    if isinstance(view.get("roles"), dict):
        view["roles"] = {name: role for name, role in view["roles"].items() if name in EVAL_ROLES}
    return view


def check_eval_resume(config_path: Path, config: dict[str, Any], *, value: str) -> None:
    """Refuse ``eval --run-dir`` when the saved config.json differs in anything that changes the results."""
    if not config_path.exists():
        return
    try:
        saved = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"the run's config.json is unreadable ({exc}); restore it or start a new run directory",
                          source=str(config_path)) from None
    if not isinstance(saved, dict):
        raise ConfigError("the run's config.json is not an object", source=str(config_path))
    changes = differences(_eval_view(saved, config), _eval_view(config, saved))
    if changes:
        raise _refuse("this run directory was started with other settings", changes, field="--run-dir", value=value)
