"""The embedded model files: joined from parts once, sha256-checked, refused when they differ."""

import hashlib

import pytest

from nlgrad.errors import LocalModelError
from nlgrad.lm import local_models
from nlgrad.lm.local_models import LocalModelSpec, model_fingerprint, resolve_model_file


@pytest.fixture
def fake_spec(tmp_path, monkeypatch):
    monkeypatch.setenv("NLGRAD_HOME", str(tmp_path / "home"))
    parts = []
    for i, chunk in enumerate([b"GGUF-part-one|", b"part-two|", b"end"]):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(chunk)
        parts.append(p)
    sha = hashlib.sha256(b"GGUF-part-one|part-two|end").hexdigest()
    spec = LocalModelSpec(name="fake", packages=("x",), extra="local", sha256=sha, file_name="fake.gguf")
    monkeypatch.setitem(local_models.BUILTIN_MODELS, "fake", spec)
    monkeypatch.setattr(local_models, "_part_files", lambda s: parts)
    return spec


def test_parts_are_joined_in_order_and_verified(fake_spec, tmp_path):
    resolved = resolve_model_file("fake")
    assert resolved.path.read_bytes() == b"GGUF-part-one|part-two|end"
    assert resolved.fingerprint == fake_spec.sha256
    assert resolve_model_file("fake").path == resolved.path  # second time: no rejoin needed


def test_file_with_wrong_sha_is_refused(fake_spec, tmp_path):
    target = tmp_path / "home" / "models" / "fake.gguf"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"tampered")
    with pytest.raises(LocalModelError, match="sha256"):
        resolve_model_file("fake")
    assert target.read_bytes() == b"tampered"  # nothing overwritten


def test_parts_with_wrong_sha_are_refused(fake_spec, monkeypatch, tmp_path):
    monkeypatch.setitem(local_models.BUILTIN_MODELS, "fake",
                        LocalModelSpec("fake", ("x",), "local", "0" * 64, "fake.gguf"))
    with pytest.raises(LocalModelError, match="refusing"):
        resolve_model_file("fake")
    assert not (tmp_path / "home" / "models" / "fake.gguf").exists()


def test_missing_part_package_names_the_extra(monkeypatch):
    spec = LocalModelSpec("ghost", ("nlgrad_no_such_part_pkg",), "local", "0" * 64, "ghost.gguf")
    with pytest.raises(LocalModelError, match=r"nlgrad\[local\]"):
        local_models._part_files(spec)


def test_user_model_env_var(tmp_path, monkeypatch):
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"weights")
    monkeypatch.setenv("NLGRAD_LOCAL_MODEL", str(gguf))
    assert resolve_model_file("qwen2.5-coder-0.5b").path == gguf
    assert model_fingerprint("qwen2.5-coder-0.5b").startswith("user:")
    monkeypatch.setenv("NLGRAD_LOCAL_MODEL", str(tmp_path / "absent.gguf"))
    with pytest.raises(LocalModelError, match="absent.gguf"):
        resolve_model_file("qwen2.5-coder-0.5b")


def test_unknown_local_model():
    with pytest.raises(LocalModelError, match="known"):
        resolve_model_file("gpt-99")


def test_busy_server_is_reused_not_duplicated(tmp_path, monkeypatch):
    """A server that accepts connections but is slow to answer HTTP (busy) must not trigger a second server."""
    import json
    import os
    import socket

    from nlgrad.lm.local_server import LocalServers

    monkeypatch.setenv("NLGRAD_HOME", str(tmp_path))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts, never answers
    port = listener.getsockname()[1]
    state = tmp_path / "servers" / "qwen2.5-coder-0.5b.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"name": "qwen2.5-coder-0.5b", "pid": os.getpid(), "port": port,
                                 "model_path": "x", "owner": "process", "log_path": "x"}))
    started = []
    monkeypatch.setattr(LocalServers, "_start", lambda self, name, **kw: started.append(name))
    try:
        info = LocalServers().ensure("qwen2.5-coder-0.5b")
        assert info.port == port and started == []
    finally:
        listener.close()
    assert LocalServers().status("qwen2.5-coder-0.5b") is None  # port closed: not reusable any more
