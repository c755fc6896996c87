from __future__ import annotations

from pathlib import Path

import pytest

from nlgrad.policy import PolicyMemory, PolicyStore, apply_update, parse_policy_text
from policy_helpers import HUMAN_YAML


@pytest.fixture
def human_yaml() -> str:
    return HUMAN_YAML


@pytest.fixture
def memory() -> PolicyMemory:
    return parse_policy_text(HUMAN_YAML, source="human.yaml")


@pytest.fixture
def store(tmp_path: Path, memory: PolicyMemory) -> PolicyStore:
    """A store with three versions: v1 human, v2 (add + upvote), v3 (edit + delete)."""
    st = PolicyStore(tmp_path / "pol")
    st.commit(memory, method="human", note="seed")
    v1 = st.load(1)
    v2, _ = apply_update(v1, [{"op": "add", "route": "twx.act", "text": "Take the coin as soon as you see it."},
                              {"op": "upvote", "id": "twx.act#2"}], provenance={"source": "nlgrad", "iteration": 1})
    st.commit(v2, scores={"dev": 0.5}, ops_count=2)
    v3, _ = apply_update(st.load(2), [{"op": "edit", "id": "twx.act#3", "text": "Take the coin at once."},
                                      {"op": "delete", "id": "twx.plan#1"}],
                         provenance={"source": "nlgrad", "iteration": 2})
    st.commit(v3, scores={"dev": 0.6}, ops_count=2)
    return st
