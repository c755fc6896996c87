"""Disk cache of LM replies, keyed by what determines a reply and nothing secret.

The key covers the logical model string, the messages, the sampling parameters and an explicit sample index, so that
n samples at temperature > 0 are n entries and an identical rerun is served entirely from disk. API keys, ``api_base``
and any other credentials are never part of a key or a stored value.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import diskcache

from nlgrad.errors import ConfigError

# Sampling parameters that change what a model returns. Anything else (timeouts, keys, api_base) stays out.
KEY_PARAMS = ("temperature", "top_p", "max_tokens", "stop", "seed", "response_format", "grammar", "n")
CACHE_FORMAT = 1
log = logging.getLogger(__name__)


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any], sample_index: int,
              model_fingerprint: str = "") -> str:
    payload = {
        "v": CACHE_FORMAT,
        "model": model,
        "fingerprint": model_fingerprint,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": {k: params[k] for k in KEY_PARAMS if params.get(k) is not None},
        "sample_index": sample_index,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ReplyCache:
    """A thin wrapper over :class:`diskcache.Cache` that stores plain JSON-able reply records."""

    def __init__(self, directory: str | Path, size_limit_bytes: int = 4 * 2**30):
        self.directory = Path(directory)
        self._write_failed = False
        try:
            self._cache = diskcache.Cache(str(self.directory), size_limit=size_limit_bytes)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot use the LM reply cache ({exc}); fix or delete it, choose another with "
                              "--cache-dir, or run with --no-cache", field="cache_dir",
                              value=str(self.directory)) from None

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            value = self._cache.get(key, default=None)
        except Exception:  # a corrupt entry is a miss, never a crash
            return None
        if not isinstance(value, dict) or "text" not in value:
            return None
        return value

    def set(self, key: str, record: dict[str, Any]) -> None:
        """Store ``record``. A failed write (full disk, I/O error) loses only the caching, never the reply: it is
        logged once per cache and the call's result stands (a resume asks the model again)."""
        try:
            self._cache.set(key, record)
        except (OSError, sqlite3.Error) as exc:
            if not self._write_failed:
                self._write_failed = True
                log.warning("the LM reply cache at %s cannot be written (%s); replies are not cached from now on "
                            "until it can", self.directory, exc)

    def __len__(self) -> int:
        return len(self._cache)

    def close(self) -> None:
        self._cache.close()
