"""Which program serves a local GGUF: llama.cpp's own ``llama-server`` (default) or ``llama_cpp.server`` (fallback).

``llama-server`` answers several requests at once (``-np`` slots, continuous batching), keeps each slot's prompt
prefix (an episode's growing history is not re-read each step) and turns a JSON schema into a decoding grammar.
``scripts/install.sh`` builds it from the vendored llama.cpp of the pinned llama-cpp-python sdist and keeps it under
``$NLGRAD_HOME/bin/``. ``llama_cpp.server`` (the ``local-python-server`` extra) answers one request at a time.

``NLGRAD_LOCAL_SERVER`` picks one: ``llama-server``, ``python`` or ``auto`` (default: llama-server when its binary is
found, else the Python server with one warning line). ``NLGRAD_LLAMA_SERVER`` points at a binary of your own.
``NLGRAD_LOCAL_SLOTS`` sets llama-server's parallel slots (default 4); ``NLGRAD_LOCAL_DRAFT`` names a local model
that drafts tokens for the others (speculative decoding; same tokenizer family).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from nlgrad.config import default_cache_root
from nlgrad.errors import LocalModelError

log = logging.getLogger(__name__)

LLAMA_CPP_VERSION = "0.3.36"  # the llama-cpp-python sdist whose vendored llama.cpp install.sh builds
DEFAULT_SLOTS = 4
SERVER_CHOICES = ("auto", "llama-server", "python")


@dataclass(frozen=True)
class LaunchSpec:
    """Everything a backend needs to build its command line."""

    model_path: Path
    alias: str
    port: int
    threads: int
    n_ctx: int  # context per slot
    slots: int
    draft_path: Path | None = None


class ServerBackend(Protocol):
    """How one server program is started. ``command`` builds the argv; ``env`` adds to the environment;
    ``health_path`` answers 200 once the model is loaded; ``slots`` is how many requests it serves at once."""

    name: str
    health_path: str

    def slots(self, requested: int) -> int: ...

    def command(self, spec: LaunchSpec) -> list[str]: ...

    def env(self) -> dict[str, str]: ...


class LlamaServer:
    name = "llama-server"
    health_path = "/health"

    def __init__(self, binary: Path):
        self.binary = binary

    def slots(self, requested: int) -> int:
        return max(1, requested)

    def command(self, spec: LaunchSpec) -> list[str]:
        cmd = [
            str(self.binary), "--model", str(spec.model_path), "--alias", spec.alias,
            "--host", "127.0.0.1", "--port", str(spec.port),
            "--threads", str(spec.threads), "--threads-http", str(max(2, spec.slots)),
            "--parallel", str(spec.slots), "--ctx-size", str(spec.n_ctx * spec.slots), "--no-kv-unified",
            "--cont-batching", "--cache-prompt", "--cache-ram", "512",
            "--no-webui", "--jinja",
        ]
        if spec.draft_path is not None:
            cmd += ["--model-draft", str(spec.draft_path), "--spec-type", "draft-simple"]
        return cmd

    def env(self) -> dict[str, str]:
        # a binary built in place needs its shared libraries (libllama, libggml*) from its own folder
        here = str(self.binary.parent)
        current = os.environ.get("LD_LIBRARY_PATH", "")
        return {"LD_LIBRARY_PATH": f"{here}:{current}" if current else here}


class PythonServer:
    name = "python"
    health_path = "/v1/models"

    def slots(self, requested: int) -> int:
        return 1  # llama_cpp.server answers one request at a time

    def command(self, spec: LaunchSpec) -> list[str]:
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(spec.model_path), "--model_alias", spec.alias,
            "--host", "127.0.0.1", "--port", str(spec.port),
            "--n_threads", str(spec.threads), "--n_ctx", str(spec.n_ctx),
        ]

    def env(self) -> dict[str, str]:
        # a bindings-only wheel (built with -DLLAMA_BUILD=OFF beside llama-server) loads llama-server's libraries
        if _bundled_llama_lib() is None and (default_binary_dir() / "libllama.so").exists():
            return {"LLAMA_CPP_LIB_PATH": str(default_binary_dir())}
        return {}


def _bundled_llama_lib() -> Path | None:
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return None
    return next(iter((Path(spec.origin).parent / "lib").glob("libllama*")), None)


def default_binary_dir() -> Path:
    return default_cache_root() / "bin" / f"llama-server-{LLAMA_CPP_VERSION}-generic"


def find_llama_server() -> Path | None:
    """``NLGRAD_LLAMA_SERVER``, else the binary install.sh built, else ``llama-server`` on PATH."""
    given = os.environ.get("NLGRAD_LLAMA_SERVER")
    if given:
        path = Path(given)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise LocalModelError(f"NLGRAD_LLAMA_SERVER={given} is not an executable file")
        return path
    built = default_binary_dir() / "llama-server"
    if built.is_file() and os.access(built, os.X_OK):
        return built
    found = shutil.which("llama-server")
    return Path(found) if found else None


def python_server_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


_warned_fallback = False


def select_backend(choice: str | None = None) -> ServerBackend:
    """The backend that ``choice`` (or ``NLGRAD_LOCAL_SERVER``) names; ``auto`` falls back to the Python server with
    one warning line when no llama-server binary is found."""
    global _warned_fallback
    choice = (choice or os.environ.get("NLGRAD_LOCAL_SERVER") or "auto").strip().lower()
    if choice not in SERVER_CHOICES:
        raise LocalModelError(f"NLGRAD_LOCAL_SERVER={choice!r} is not one of {', '.join(SERVER_CHOICES)}")
    if choice in ("auto", "llama-server"):
        binary = find_llama_server()
        if binary is not None:
            return LlamaServer(binary)
        if choice == "llama-server":
            raise LocalModelError(f"no llama-server binary: run scripts/install.sh (it builds one into "
                                  f"{default_binary_dir()}) or set NLGRAD_LLAMA_SERVER=/path/to/llama-server")
    if not python_server_installed():
        raise LocalModelError(
            "no local model server is installed: run scripts/install.sh (builds llama-server), or install the "
            "fallback with CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install 'nlgrad[local-python-server]'")
    if choice == "auto" and not _warned_fallback:
        _warned_fallback = True
        log.warning("llama-server not found (scripts/install.sh builds it); serving local models with the slower "
                    "llama_cpp.server, one request at a time")
    return PythonServer()


def requested_slots() -> int:
    raw = os.environ.get("NLGRAD_LOCAL_SLOTS", str(DEFAULT_SLOTS))
    try:
        value = int(raw)
    except ValueError:
        raise LocalModelError(f"NLGRAD_LOCAL_SLOTS={raw!r} is not a whole number") from None
    if not 1 <= value <= 64:
        raise LocalModelError(f"NLGRAD_LOCAL_SLOTS={value} is outside 1..64")
    return value
