"""A guard for the tests that run the real embedded local model."""

from __future__ import annotations

import os

import pytest


def require_local_server() -> None:
    """Skip a real-model test where no local model server is installed (llama-server or the Python fallback); in CI
    (``CI`` set) fail instead, so a missing install step never passes as skipped tests."""
    from nlgrad.errors import LocalModelError
    from nlgrad.lm.server_backends import select_backend

    try:
        select_backend()
    except LocalModelError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must be able to serve the local models: {exc}")
        pytest.skip(f"no local model server: {exc}", allow_module_level=True)
