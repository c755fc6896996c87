"""Known secret values out of every error text nlgrad stores or logs.

A provider's error body may echo the API key it refused (whole, or cut: ``Incorrect API key provided: sk-...``), and
a traceback carries that body along, so error texts are passed through :func:`redact` before they are stored: trace
node errors, a trace's error and traceback, results' ``error`` and feedback, :class:`~nlgrad.errors.LMCallError`
messages. Log records get the same treatment from a log-record factory installed once a secret is known, so any
handler (a log file, Ray's worker logs) only ever sees redacted text.

The secrets are the values of the environment variables named by any role's ``api_key_env`` (read when redacting, so
a key set later is covered too), of variables named ``*_API_KEY`` (litellm reads those by itself), and any key given
to nlgrad directly (:func:`register`). A secret is replaced where it appears whole, base64- or hex-encoded, or as a
fragment of at least ``FRAGMENT`` characters (a cut or partly masked echo).
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
from typing import Any

MASK = "[REDACTED]"
MIN_SECRET = 8  # shorter values are not treated as secrets (they would mask ordinary words)
FRAGMENT = 12  # a run of this many characters of a secret is masked wherever it appears

_lock = threading.Lock()
_env_names: set[str] = set()
_values: set[str] = set()
_factory_installed = False
_cache: tuple[tuple[str, ...], Any] | None = None  # (secrets, compiled pattern and fragment index)


def register_env(*names: str | None) -> None:
    """Treat the values of these environment variables as secrets (now and whenever they change)."""
    with _lock:
        _env_names.update(n for n in names if n)
    _install_log_redaction()


def register(*values: str | None) -> None:
    """Treat these values as secrets (a key given to nlgrad other than through the environment)."""
    with _lock:
        _values.update(v for v in values if v and len(v) >= MIN_SECRET)
    _install_log_redaction()


def register_settings(settings: Any) -> None:
    """The ``api_key_env`` variables of every role of ``settings`` (a :class:`~nlgrad.config.Settings`)."""
    register_env(*(role.api_key_env for role in settings.roles.values()))


def known_secrets() -> tuple[str, ...]:
    """The secret values known now, longest first."""
    with _lock:
        names, values = set(_env_names), set(_values)
    names |= {name for name in os.environ if name.endswith("_API_KEY")}
    found = values | {os.environ[n] for n in names if len(os.environ.get(n, "")) >= MIN_SECRET}
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


def _matcher(secrets: tuple[str, ...]):
    """A pattern of every whole form and every FRAGMENT-long window of each secret, and where each window lies."""
    global _cache
    cache = _cache
    if cache is not None and cache[0] == secrets:
        return cache[1]
    whole: list[str] = []
    windows: dict[str, tuple[str, int]] = {}
    for secret in secrets:
        raw = secret.encode()
        whole += [secret, base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode(), raw.hex()]
        for i in range(max(0, len(secret) - FRAGMENT + 1)):
            windows.setdefault(secret[i:i + FRAGMENT], (secret, i))
    alternatives = sorted(set(whole) | set(windows), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(a) for a in alternatives))
    _cache = (secrets, (pattern, windows))
    return pattern, windows


def redact(text: Any) -> Any:
    """``text`` with every known secret (whole, encoded, or a long fragment) replaced by ``[REDACTED]``; anything
    that is not a non-empty string is returned as it is."""
    if not isinstance(text, str) or not text:
        return text
    secrets = known_secrets()
    if not secrets:
        return text
    pattern, windows = _matcher(secrets)
    spans: list[list[int]] = []
    for match in pattern.finditer(text):
        start, end = match.span()
        if match.group(0) in windows:  # extend a fragment as far as the text keeps following the secret
            secret, i = windows[match.group(0)]
            j = i + FRAGMENT
            while start > 0 and i > 0 and text[start - 1] == secret[i - 1]:
                start, i = start - 1, i - 1
            while end < len(text) and j < len(secret) and text[end] == secret[j]:
                end, j = end + 1, j + 1
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out += [text[last:start], MASK]
        last = end
    out.append(text[last:])
    return "".join(out)


def redact_obj(value: Any) -> Any:
    """:func:`redact` applied to every string in nested dicts and lists."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_obj(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_obj(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------------ logging
def _redact_record(record: logging.LogRecord) -> logging.LogRecord:
    if not known_secrets():
        return record
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string is the handler's to report
        return record
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[1] is not None:
        text = logging.Formatter().formatException(record.exc_info)
        record.exc_text = redact(text)  # handlers use exc_text when set, never the raw exception
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
    return record


def _install_log_redaction() -> None:
    """Every log record made in this process (nlgrad's, litellm's, httpx's...) is redacted when it is created."""
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        _factory_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return _redact_record(previous(*args, **kwargs))

    logging.setLogRecordFactory(factory)
