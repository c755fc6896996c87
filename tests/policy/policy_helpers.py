"""Helpers shared by the policy tests (a uniquely named module, so it never clashes with other test folders)."""

from __future__ import annotations

from pathlib import Path

HUMAN_YAML = """\
schema_version: 1
program: twx_react
benchmark: twx/coin
routes:
  twx.act:
    - text: "If the coin is not in the room, move through an unexplored exit."
      when: "the room has no coin"
    - text: "Open closed doors before leaving a room."
  twx.plan:
    - text: "Write a one-line plan before the first action."
      kind: rule
"""


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file's bytes under ``directory`` (to assert that reading changed nothing)."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}
