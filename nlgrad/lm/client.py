"""The LM client: one ``complete`` call per (role, messages, sample), through litellm, cached, ledgered, retried."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import litellm

from nlgrad.config import Settings
from nlgrad.errors import LMCallError, TaskTimeout
from nlgrad.interrupt import raise_if_stopping
from nlgrad.lm.cache import ReplyCache, cache_key
from nlgrad.lm.choice_grammar import choice_grammar
from nlgrad.lm.ledger import Ledger
from nlgrad.lm.local_models import model_fingerprint
from nlgrad.lm.local_server import LOCAL_API_KEY, LocalServers
from nlgrad.lm.retry import backoff_delay, is_retryable
from nlgrad.redact import register as register_secret
from nlgrad.redact import register_settings as register_secret_settings

litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stdout; nlgrad reports errors itself

LOCAL_PREFIX = "local/"
DEFAULT_REMOTE_CONCURRENCY = 8
NO_AUTH_KEY = "sk-no-key-configured"


def check_models(settings: Settings, roles: tuple[str, ...]) -> None:
    """Fail before any work if a role names an unknown local model or a model string litellm cannot route."""
    from nlgrad.errors import ConfigError, LocalModelError
    from nlgrad.lm.local_models import BUILTIN_MODELS, is_available

    for role in roles:
        cfg = settings.role(role)
        if cfg.model.startswith(LOCAL_PREFIX):
            name = cfg.model[len(LOCAL_PREFIX):]
            if name not in BUILTIN_MODELS and name not in settings.local_models:
                known = ", ".join(f"local/{n}" for n in sorted(BUILTIN_MODELS))
                raise LocalModelError(f"unknown local model '{cfg.model}'; known: {known} "
                                      f"(or map one in settings.local_models) [roles.{role}.model]")
            if not is_available(name, settings.local_models):
                raise LocalModelError(f"local model '{cfg.model}' (roles.{role}.model) is not installed")
            continue
        try:
            litellm.get_llm_provider(cfg.model, api_base=cfg.api_base)
        except Exception as exc:  # noqa: BLE001 - litellm raises BadRequestError for unknown providers
            raise ConfigError(f"litellm cannot route this model string: {_short(exc, 160)}",
                              field=f"roles.{role}.model", value=cfg.model) from None


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False
    retries: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class _Route:
    litellm_model: str
    api_base: str | None
    api_key: str | None
    slots: int | None = None  # a local server's parallel slots
    backend: str | None = None  # a local server's program ("llama-server" reads a GBNF ``grammar``)


class LM:
    """Calls models by role. Pass one instance down to everything that needs an LM (no global engine)."""

    def __init__(self, settings: Settings, *, ledger: Ledger | None = None, cache: ReplyCache | None = None,
                 servers: LocalServers | None = None, sleep=time.sleep, litellm_kwargs: dict[str, Any] | None = None):
        self.settings = settings
        register_secret_settings(settings)  # their keys are redacted from every stored error and log record
        register_secret((litellm_kwargs or {}).get("api_key"))
        self.ledger = ledger if ledger is not None else Ledger()
        if cache is None and settings.use_cache:
            cache = ReplyCache(settings.cache_dir)
        self.cache = cache
        self.servers = servers or LocalServers(user_models=settings.local_models)
        self._sleep = sleep
        self._litellm_kwargs = dict(litellm_kwargs or {})
        self._semaphores: dict[str, threading.BoundedSemaphore] = {}
        self._sem_lock = threading.Lock()
        self._fingerprints: dict[str, str] = {}

    # ---- public API -------------------------------------------------------------------------------------------
    def model_for(self, role: str) -> str:
        return self.settings.role(role).model

    def complete(self, role: str, messages: list[dict[str, str]], *, sample_index: int = 0,
                 temperature: float | None = None, max_tokens: int | None = None, stop: list[str] | None = None,
                 seed: int | None = None, deadline: float | None = None, **extra: Any) -> Completion:
        """One completion for ``role``. ``sample_index`` distinguishes samples that share everything else."""
        cfg = self.settings.role(role)
        response_format = extra.pop("response_format", None)
        params = {
            "temperature": cfg.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or cfg.max_tokens,
            "stop": stop,
            "seed": seed,
            "response_format": response_format,
            # a reply that must be one of a few strings: llama-server gets a grammar with nothing after the choice
            "grammar": choice_grammar(response_format) if cfg.model.startswith(LOCAL_PREFIX) else None,
        }
        key = None
        if self.cache is not None:
            key = cache_key(cfg.model, messages, params, sample_index, self._fingerprint(cfg.model))
            hit = self.cache.get(key)
            if hit is not None:
                self.ledger.record(role, cached=True)
                return Completion(text=hit["text"], model=cfg.model, prompt_tokens=hit.get("prompt_tokens", 0),
                                  completion_tokens=hit.get("completion_tokens", 0), cost_usd=0.0, cached=True)
        completion = self._call_with_retries(role, cfg, messages, params, deadline, extra)
        if self.cache is not None and key is not None:
            self.cache.set(key, {"text": completion.text, "prompt_tokens": completion.prompt_tokens,
                                 "completion_tokens": completion.completion_tokens, "model": cfg.model})
        return completion

    def parallelism(self, role: str) -> int:
        """How many calls for ``role`` to issue at once: ``max_concurrency`` if set, else a local server's slots, else
        1 (a hosted model runs calls side by side only when its config says how many). Executors and the critic
        phases size their thread pools by it."""
        cfg = self.settings.role(role)
        if cfg.max_concurrency:
            return cfg.max_concurrency
        if cfg.model.startswith(LOCAL_PREFIX):
            return self.servers.slots_for(cfg.model[len(LOCAL_PREFIX):])
        return 1

    def constrains_json(self, role: str) -> bool:
        """Whether ``role``'s model takes a JSON schema as a decoding grammar (llama.cpp's server does)."""
        return self.model_for(role).startswith(LOCAL_PREFIX)

    def structured(self, role: str, messages: list[dict[str, str]], schema, **kwargs):
        """Parse a reply into the pydantic model ``schema`` (re-asks once; see :mod:`nlgrad.lm.structured`)."""
        from nlgrad.lm.structured import parse_structured

        return parse_structured(self, role, messages, schema, **kwargs)

    # ---- internals --------------------------------------------------------------------------------------------
    def _fingerprint(self, model: str) -> str:
        if not model.startswith(LOCAL_PREFIX):
            return ""
        name = model[len(LOCAL_PREFIX):]
        if name not in self._fingerprints:
            self._fingerprints[name] = model_fingerprint(name, self.servers.user_models)
        return self._fingerprints[name]

    def _route(self, model: str, cfg) -> _Route:
        api_key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
        if model.startswith(LOCAL_PREFIX):
            info = self.servers.ensure(model[len(LOCAL_PREFIX):])
            return _Route(f"openai/{info.name}", info.api_base, LOCAL_API_KEY, info.slots, info.backend)
        if api_key is None and cfg.api_base and model.startswith("openai/"):
            # an OpenAI-compatible server without auth (vLLM, SGLang, llama.cpp): litellm still wants *a* key
            api_key = os.environ.get("OPENAI_API_KEY") or NO_AUTH_KEY
        if api_key != NO_AUTH_KEY:
            register_secret(api_key)
        return _Route(model, cfg.api_base, api_key)

    def _semaphore(self, model: str, cfg, slots: int | None) -> threading.BoundedSemaphore:
        """Calls to one model in flight at once: ``max_concurrency``, else the local server's slots (a request beyond
        them would only queue inside the server), else ``DEFAULT_REMOTE_CONCURRENCY``."""
        with self._sem_lock:
            if model not in self._semaphores:
                local = model.startswith(LOCAL_PREFIX)
                limit = cfg.max_concurrency or ((slots or 1) if local else DEFAULT_REMOTE_CONCURRENCY)
                self._semaphores[model] = threading.BoundedSemaphore(limit)
            return self._semaphores[model]

    def _call_with_retries(self, role, cfg, messages, params, deadline, extra) -> Completion:
        """Transient errors are retried with backoff up to ``settings.retries`` times. An empty reply is retried too
        (once for a local model, whose greedy reply would not change), then returned as "" so that the caller's
        parser reports it in the trace instead of the task failing. Once the run is being stopped (SIGTERM, SIGINT) no
        attempt starts and a failed one is not the task's error: :class:`~nlgrad.interrupt.Interrupted` is raised."""
        retries, empties = 0, 0
        max_empties = 2 if cfg.model.startswith(LOCAL_PREFIX) else self.settings.retries + 1
        attempts = self.settings.retries + 1
        last_exc: BaseException | None = None
        for attempt in range(attempts):
            raise_if_stopping()
            timeout = cfg.timeout_s
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.ledger.record(role, cached=False, retries=retries, error=True)
                    raise TaskTimeout(f"task deadline passed before a {role} call")
                timeout = min(timeout, remaining)
            try:
                completion = self._call_once(role, cfg, messages, params, timeout, extra)
            except Exception as exc:  # noqa: BLE001 - classified below
                raise_if_stopping()  # the run's server was stopped under this call
                last_exc = exc
                if not is_retryable(exc) or attempt == attempts - 1:
                    self.ledger.record(role, cached=False, retries=retries, error=True)
                    raise LMCallError(f"{type(exc).__name__}: {_short(exc)}", role=role, model=cfg.model,
                                      retryable=is_retryable(exc)) from exc
                retries += 1
                self._sleep(backoff_delay(attempt, self.settings.backoff_base_s, self.settings.backoff_max_s))
                continue
            if not completion.text.strip():
                empties += 1
                if empties < max_empties and attempt < attempts - 1:
                    retries += 1
                    self._sleep(backoff_delay(attempt, self.settings.backoff_base_s, self.settings.backoff_max_s))
                    continue
            self.ledger.record(role, cached=False, prompt_tokens=completion.prompt_tokens,
                               completion_tokens=completion.completion_tokens, cost_usd=completion.cost_usd,
                               wall_s=completion.latency_s, retries=retries)
            return Completion(**{**completion.__dict__, "retries": retries})
        raise LMCallError(f"no attempt succeeded: {last_exc}", role=role, model=cfg.model)  # pragma: no cover

    def _call_once(self, role, cfg, messages, params, timeout, extra) -> Completion:
        route = self._route(cfg.model, cfg)
        kwargs: dict[str, Any] = {k: v for k, v in params.items() if v is not None}
        grammar = kwargs.pop("grammar", None)
        kwargs.update(self._litellm_kwargs)
        kwargs.update(extra)
        if grammar is not None and route.backend == "llama-server":
            kwargs.pop("response_format", None)
            kwargs["extra_body"] = {**(kwargs.get("extra_body") or {}), "grammar": grammar}
        with self._semaphore(cfg.model, cfg, route.slots):
            start = time.monotonic()
            response = litellm.completion(model=route.litellm_model, messages=messages, timeout=timeout,
                                          api_base=route.api_base, api_key=route.api_key, num_retries=0, **kwargs)
            latency = time.monotonic() - start
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = 0.0
        if not cfg.model.startswith(LOCAL_PREFIX):
            try:
                cost = float(litellm.completion_cost(completion_response=response) or 0.0)
            except Exception:  # noqa: BLE001 - unknown models have no price in litellm's map
                cost = 0.0
        return Completion(text=text, model=cfg.model, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens, cost_usd=cost, latency_s=latency)


def _short(exc: BaseException, limit: int = 300) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."
