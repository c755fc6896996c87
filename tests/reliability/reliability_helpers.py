"""Helpers of the reliability suite (importable by name from its tests; fixtures stay in conftest.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from nlgrad.config import RoleConfig, Settings  # noqa: E402

TOY_KEY_ENV = "NLGRAD_TOY_KEY"


def toy_settings(tmp_path: Path, api_base: str, cache: str = "cache", *, retries: int = 4, timeout_s: float = 5.0,
                 **role_kw) -> Settings:
    role_kw.setdefault("api_key_env", TOY_KEY_ENV)
    role = RoleConfig(model="openai/toy", api_base=api_base, max_tokens=64, timeout_s=timeout_s, **role_kw)
    return Settings(roles={"agent": role, "critic": role, "optimizer": role}, cache_dir=tmp_path / cache,
                    runs_dir=tmp_path / "runs", retries=retries, backoff_base_s=0.001, backoff_max_s=0.005)


def write_toy_config(path: Path, api_base: str, *, cache_dir: Path, runs_dir: Path, extra_role: str = "",
                     timeout_s: float = 5.0) -> Path:
    """A TOML config for subprocess / CLI runs against the fake server."""
    roles = "".join(
        f'[roles.{name}]\nmodel = "openai/toy"\napi_base = "{api_base}"\napi_key_env = "{TOY_KEY_ENV}"\n'
        f"max_tokens = 64\ntimeout_s = {timeout_s}\n{extra_role}\n" for name in ("agent", "critic", "optimizer"))
    path.write_text(f'cache_dir = "{cache_dir}"\nruns_dir = "{runs_dir}"\nretries = 4\nbackoff_base_s = 0.001\n'
                    f"backoff_max_s = 0.005\n\n{roles}", encoding="utf-8")
    return path


def policy_versions(path: Path) -> list[dict]:
    from nlgrad.policy import PolicyStore

    store = PolicyStore(path)
    return [store.load(v).model_dump(mode="json", exclude={"created"}) for v in store.versions()]


def result_rows(run_dir: Path) -> list[tuple]:
    """Per-task outcome of a run dir's results.jsonl, in task order (latency excluded)."""
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]
    return sorted((r["task_id"], r["score"], r["success"], r["feedback"], r["error"], json.dumps(r["output"]))
                  for r in rows)
