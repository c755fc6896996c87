"""Find a secret in files and texts: whole, base64, hex, or a long part of it (a provider's cut echo)."""

from __future__ import annotations

import base64
from pathlib import Path


def secret_forms(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [raw, base64.b64encode(raw), raw.hex().encode(), secret[10:].encode(), secret[:-10].encode()]


def find_secret(secret: str, roots: list[Path] = (), texts: dict[str, str] | None = None) -> list[str]:
    """Where ``secret`` appears in any regular file under ``roots`` or in ``texts``: ``["<where> (<form>...)"]``."""
    leaks = []
    for root in roots:
        for path in Path(root).rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                leaks += [f"{path} ({form[:8]!r}...)" for form in secret_forms(secret) if form in data]
    for name, text in (texts or {}).items():
        leaks += [f"{name} ({form[:8]!r}...)" for form in secret_forms(secret) if form in text.encode()]
    return leaks
