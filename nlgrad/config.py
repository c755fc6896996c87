"""Settings: which model plays which role, where caches and runs live, retry and timeout knobs.

Settings come from (lowest to highest priority): built-in defaults, a TOML file (``--config`` or ``NLGRAD_CONFIG``),
environment variables, and explicit overrides (CLI options). A bad value raises :class:`ConfigError` naming the
source, the field and the value.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from nlgrad.errors import ConfigError

DEFAULT_AGENT_MODEL = "local/qwen2.5-coder-0.5b"
DEFAULT_CRITIC_MODEL = "local/qwen2.5-coder-1.5b"
ROLES = ("agent", "critic", "optimizer", "user_sim")


def default_cache_root() -> Path:
    return Path(os.environ.get("NLGRAD_HOME", Path.home() / ".cache" / "nlgrad"))


class RoleConfig(BaseModel):
    """How to call the model that plays one role. Secrets are named by env var, never stored."""

    model_config = ConfigDict(extra="forbid")

    model: str
    api_base: str | None = None
    api_key_env: str | None = Field(default=None, description="name of the env var that holds the API key")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=384, gt=0)
    timeout_s: float = Field(default=180.0, gt=0)
    max_concurrency: int | None = Field(default=None, gt=0)

    @field_validator("model")
    @classmethod
    def _model_shape(cls, value: str) -> str:
        if not value or "/" not in value or value.startswith("/") or value.endswith("/"):
            raise ValueError("a model string looks like 'provider/name', e.g. 'openai/gpt-4o-mini' or 'local/qwen2.5-coder-0.5b'")
        return value


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    roles: dict[str, RoleConfig] = Field(
        default_factory=lambda: {
            "agent": RoleConfig(model=DEFAULT_AGENT_MODEL),
            "critic": RoleConfig(model=DEFAULT_CRITIC_MODEL, max_tokens=512),
            "optimizer": RoleConfig(model=DEFAULT_CRITIC_MODEL, max_tokens=512),
            "user_sim": RoleConfig(model=DEFAULT_AGENT_MODEL),
        }
    )
    local_models: dict[str, Path] = Field(default_factory=dict, description="extra local/<name> -> GGUF path")
    cache_dir: Path = Field(default_factory=lambda: default_cache_root() / "lm-cache")
    use_cache: bool = True
    runs_dir: Path = Path("runs")
    retries: int = Field(default=4, ge=0, le=20)
    backoff_base_s: float = Field(default=1.0, gt=0)
    backoff_max_s: float = Field(default=30.0, gt=0)

    def role(self, name: str) -> RoleConfig:
        if name in self.roles:
            return self.roles[name]
        if name in ("optimizer", "user_sim") and "critic" in self.roles:
            return self.roles["critic"]
        raise ConfigError("no model is configured for this role", field=f"roles.{name}", value=name)

    def with_role_model(self, role: str, model: str | None) -> "Settings":
        """A copy where ``role`` uses ``model`` (None keeps the current one)."""
        if not model:
            return self
        try:
            base = self.role(role).model_copy(update={"model": model})
            base = RoleConfig.model_validate(base.model_dump())
        except ValidationError as exc:
            raise ConfigError(_first_error(exc), source="--lm option", field=f"roles.{role}.model", value=model) from None
        roles = dict(self.roles)
        roles[role] = base
        return self.model_copy(update={"roles": roles})


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return err.get("msg", str(exc))


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Load settings from defaults, a TOML file, env vars and keyword overrides (None values are ignored)."""
    data: dict[str, Any] = {}
    source = "defaults"
    path = path or os.environ.get("NLGRAD_CONFIG")
    if path:
        source = str(path)
        p = Path(path)
        if not p.is_file():
            raise ConfigError("config file not found", source=source)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file is not valid TOML: {exc}", source=source) from None
    if os.environ.get("NLGRAD_CACHE_DIR"):
        data["cache_dir"] = os.environ["NLGRAD_CACHE_DIR"]
    if os.environ.get("NLGRAD_RUNS_DIR"):
        data["runs_dir"] = os.environ["NLGRAD_RUNS_DIR"]
    for key, value in overrides.items():
        if value is not None:
            data[key] = value
    if "roles" in data:
        defaults = Settings().roles
        merged = {k: v.model_dump() for k, v in defaults.items()}
        for role, cfg in (data["roles"] or {}).items():
            if not isinstance(cfg, dict):
                raise ConfigError("each role must be a table", source=source, field=f"roles.{role}", value=cfg)
            merged[role] = {**merged.get(role, {}), **cfg}
        data["roles"] = merged
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err.get("loc", ()))
        message, value = err.get("msg", "invalid value"), err.get("input")
        if err.get("type") == "extra_forbidden":  # never echo what may be a credential
            message, value = "unknown setting (its value is not shown, in case it is a credential)", None
        elif _secret_like(field):
            value = None
        if field.endswith(".api_key"):
            message = "API keys are not read from files: put the key in an env var and name it with api_key_env"
        raise ConfigError(message, source=source, field=field, value=value) from None


def _secret_like(field: str) -> bool:
    last = field.rsplit(".", 1)[-1].lower()
    return last != "api_key_env" and any(word in last for word in ("key", "secret", "token", "password"))
