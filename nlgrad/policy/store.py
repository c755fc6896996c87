"""PolicyStore: a directory per policy holding immutable version files, a lineage manifest and rejected updates.

Layout::

    policies/twx_react--twx-coin/
        v0001.json        # immutable, canonical JSON (never overwritten)
        v0002.json
        manifest.json     # lineage index: version, parent, method, scores, n_ops, created (rewritten atomically)
        rejected.jsonl    # updates that were proposed but not accepted (append-only)
        .lock             # advisory lock serialising commits

The version files are the source of truth: each one carries its own lineage metadata, so the manifest can always be
rebuilt from them. A crash after a version file is written but before the manifest is updated therefore loses
nothing: :meth:`PolicyStore.manifest` and :meth:`PolicyStore.load` reconcile from the version files, and the next
commit rewrites ``manifest.json``. Temporary files (``.v0003.json.*.tmp``) left by a crash are ignored.
"""

from __future__ import annotations

import json
import logging
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nlgrad.files import file_lock, fsync_dir, write_json_atomic, write_text_atomic
from nlgrad.journal import append_line
from nlgrad.policy.errors import PolicyFileError
from nlgrad.policy.io import load_policy_file
from nlgrad.policy.memory import PolicyMemory, dump_policy_json
from nlgrad.policy.schema import SCHEMA_VERSION

MANIFEST_NAME = "manifest.json"
REJECTED_NAME = "rejected.jsonl"
LOCK_NAME = ".lock"
_VERSION_FILE_RE = re.compile(r"^v(\d{4,})\.json$")
_AUTO: Any = object()
log = logging.getLogger(__name__)


def version_file_name(version: int) -> str:
    return f"v{version:04d}.json"


def default_policy_dir(program: str, benchmark: str | None = None, root: str | Path = "policies") -> Path:
    """``policies/<program>--<benchmark with / as ->``, the default home of a learned policy."""
    name = program if not benchmark else f"{program}--{benchmark}"
    return Path(root) / re.sub(r"[^A-Za-z0-9_.\-]+", "-", name).strip("-")


class ManifestEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    parent: int | None = None
    method: str
    scores: dict[str, float] = Field(default_factory=dict)
    n_ops: int = 0
    n_entries: int = 0
    created: datetime | None = None
    note: str = ""
    file: str


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    program: str | None = None
    benchmark: str | None = None
    versions: list[ManifestEntry] = Field(default_factory=list)


class RejectedUpdate(BaseModel):
    """An update that was proposed but not accepted; optimizers show these so the LM does not re-propose them."""

    model_config = ConfigDict(extra="forbid")

    created: datetime
    parent: int | None = None
    reason: str
    scores: dict[str, float] = Field(default_factory=dict)
    ops: list[dict[str, Any]] = Field(default_factory=list)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def _op_dict(op: Any) -> dict[str, Any]:
    if isinstance(op, BaseModel):
        return op.model_dump(mode="json")
    if isinstance(op, dict):
        return json.loads(json.dumps(op, default=str))
    raise TypeError(f"an operation must be a model or a dict, got {type(op).__name__}")


class PolicyStore:
    """Versioned storage of one policy in one directory. Reads never modify the directory."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)

    def __repr__(self) -> str:
        return f"PolicyStore({str(self.dir)!r})"

    # ------------------------------------------------------------------------------------------------ paths
    @property
    def manifest_path(self) -> Path:
        return self.dir / MANIFEST_NAME

    @property
    def rejected_path(self) -> Path:
        return self.dir / REJECTED_NAME

    def version_path(self, version: int) -> Path:
        return self.dir / version_file_name(version)

    # ------------------------------------------------------------------------------------------------ reading
    def versions(self) -> list[int]:
        """Committed version numbers, ascending (from the version files; the manifest is not needed)."""
        if not self.dir.is_dir():
            return []
        found = []
        for child in self.dir.iterdir():
            match = _VERSION_FILE_RE.match(child.name)
            if match and child.is_file():
                found.append(int(match.group(1)))
        return sorted(found)

    def latest(self) -> int | None:
        versions = self.versions()
        return versions[-1] if versions else None

    def load(self, version: int | None = None) -> PolicyMemory:
        """Load ``version`` (default: the latest). Raises :class:`PolicyFileError`; never writes."""
        versions = self.versions()
        if not versions:
            raise PolicyFileError("no policy versions (v0001.json, ...) in this directory", path=self.dir,
                                  field="version", value=version)
        if version is None:
            version = versions[-1]
        if version not in versions:
            raise PolicyFileError(f"no such version (available: {', '.join(map(str, versions))})", path=self.dir,
                                  field="version", value=version)
        path = self.version_path(version)
        memory = load_policy_file(path)
        if memory.version != version:
            raise PolicyFileError("the version inside the file does not match its file name", path=path,
                                  field="version", value=memory.version)
        return memory

    def manifest(self) -> Manifest:
        """The lineage manifest, rebuilt from the version files (so it is correct even after a crash)."""
        manifest = Manifest()
        for version in self.versions():
            memory = self.load(version)
            manifest.program, manifest.benchmark = memory.program, memory.benchmark
            manifest.versions.append(ManifestEntry(
                version=memory.version, parent=memory.parent, method=memory.method, scores=dict(memory.scores),
                n_ops=memory.n_ops, n_entries=memory.n_entries(),
                created=memory.created, note=memory.note, file=version_file_name(version)))
        return manifest

    def manifest_on_disk(self) -> Manifest | None:
        """``manifest.json`` as written (None if absent). It can lag behind the version files after a crash."""
        if not self.manifest_path.exists():
            return None
        try:
            return Manifest.model_validate_json(self.manifest_path.read_bytes())
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            raise PolicyFileError(f"invalid manifest: {first['msg']}", path=self.manifest_path,
                                  field=".".join(map(str, first["loc"])), value=first.get("input")) from None

    def manifest_is_current(self) -> bool:
        try:
            return self.manifest_on_disk() == self.manifest()
        except PolicyFileError:
            return False

    def lineage(self, version: int | None = None) -> list[int]:
        """``[version, parent, grandparent, ...]`` following parent links recorded in the version files."""
        manifest = {entry.version: entry for entry in self.manifest().versions}
        current = version if version is not None else self.latest()
        chain: list[int] = []
        while current is not None and current in manifest and current not in chain:
            chain.append(current)
            current = manifest[current].parent
        return chain

    # ------------------------------------------------------------------------------------------------ writing
    def repair(self) -> bool:
        """Rewrite ``manifest.json`` from the version files if it is missing or stale. Returns True if rewritten.

        A directory without version files is left alone (not even created)."""
        if not self.versions():
            return False
        with file_lock(self.dir / LOCK_NAME):
            if self.manifest_is_current():
                return False
            write_json_atomic(self.manifest_path, self.manifest().model_dump(mode="json"))
            return True

    def commit(self, memory: PolicyMemory, *, method: str | None = None, scores: dict[str, float] | None = None,
               ops_count: int | None = None, note: str = "", parent: int | None = _AUTO,
               created: datetime | None = None) -> int:
        """Write ``memory`` as the next version and update the manifest. Returns the new version number.

        The parent defaults to: the memory's own version if it is a committed version of this store (it was loaded
        and edited), else ``memory.parent`` if that names a version here (the result of :func:`apply_update`),
        else the latest version (None for the first commit). The version file is written with temp file + fsync +
        link, so an existing version is never overwritten; then the manifest is rewritten atomically.
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        with file_lock(self.dir / LOCK_NAME):
            existing = self.versions()
            if existing:
                latest = self.load(existing[-1])
                if latest.program != memory.program:
                    raise PolicyFileError("this directory holds a policy for another program", path=self.dir,
                                          field="program", value=memory.program)
            if parent is _AUTO:
                if memory.version and memory.version in existing:
                    parent = memory.version
                elif memory.parent is not None and memory.parent in existing:
                    parent = memory.parent
                else:
                    parent = existing[-1] if existing else None
            elif parent is not None and parent not in existing:
                raise PolicyFileError("the parent is not a version of this policy", path=self.dir, field="parent",
                                      value=parent)
            version = (existing[-1] + 1) if existing else 1
            committed = memory.model_copy(deep=True, update={
                "version": version, "parent": parent, "created": created or _utc_now(),
                "method": method or memory.method,
                "scores": dict(scores) if scores is not None else dict(memory.scores),
                "n_ops": ops_count if ops_count is not None else memory.n_ops,
                "note": note or memory.note,
            })
            committed = PolicyMemory.model_validate(committed.model_dump(mode="json", by_alias=True))
            path = self.version_path(version)
            try:
                write_text_atomic(path, dump_policy_json(committed), overwrite=False)
            except FileExistsError:
                raise PolicyFileError("refusing to overwrite an existing version file", path=path, field="version",
                                      value=version) from None
            try:
                os.chmod(path, 0o644)
            except OSError:
                pass
            write_json_atomic(self.manifest_path, self.manifest().model_dump(mode="json"))
            return version

    # ------------------------------------------------------------------------------------------------ rejected
    def record_rejected(self, ops: Iterable[Any], reason: str, scores: dict[str, float] | None = None,
                        parent: int | None = None) -> RejectedUpdate:
        """Append a rejected update to ``rejected.jsonl`` (one JSON object per line, fsynced)."""
        record = RejectedUpdate(created=_utc_now(), parent=parent if parent is not None else self.latest(),
                                reason=reason, scores=dict(scores or {}), ops=[_op_dict(op) for op in ops])
        line = json.dumps(record.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        self.dir.mkdir(parents=True, exist_ok=True)
        with file_lock(self.dir / LOCK_NAME):
            new_file = not self.rejected_path.exists()
            append_line(self.rejected_path, line)  # a torn line left by a crash is cut off (kept in .torn) first
            if new_file:
                fsync_dir(self.dir)
        return record

    def rejected(self) -> list[RejectedUpdate]:
        """Rejected updates, oldest first. Lines that are not JSON at all (torn fragments of an interrupted append,
        wherever an older writer left them) are skipped with one warning; a JSON line that is not a rejected update
        raises :class:`PolicyFileError`."""
        if not self.rejected_path.exists():
            return []
        records, torn = [], []
        for number, line in enumerate(self.rejected_path.read_bytes().split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError:
                torn.append(number)
                continue
            try:
                records.append(RejectedUpdate.model_validate(data))
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                raise PolicyFileError(f"invalid rejected-update record: {first['msg']}", path=self.rejected_path,
                                      field=f"line {number}: {'.'.join(map(str, first['loc']))}",
                                      value=line[:80]) from None
        if torn:
            log.warning("%s: skipped %d torn line(s) (line %s) left by an interrupted write", self.rejected_path,
                        len(torn), ", ".join(map(str, torn[:5])))
        return records


def load_policy(path_or_dir: str | Path, version: int | None = None) -> PolicyMemory:
    """Load from a policy directory (``version`` or the latest) or from a single policy file."""
    path = Path(path_or_dir)
    if path.is_dir():
        return PolicyStore(path).load(version)
    memory = load_policy_file(path)
    if version is not None and memory.version != version:
        raise PolicyFileError(f"the file holds version {memory.version}, not the requested version {version}",
                              path=path, field="version", value=memory.version)
    return memory
