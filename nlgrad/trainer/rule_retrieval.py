"""JERP's weight half in the trainer: a rule pool (an nlgrad policy directory) retrieved into the prompts it trains on.

``nlgrad train --rules DIR`` loads the latest version of the policy in ``DIR`` (or a single policy file) and runs
every rollout and every in-process evaluation with it the way ``nlgrad optimize --method jerp`` runs its rollouts:
the executor's ``policy`` is the rule pool and its per-task hook is :class:`~nlgrad.methods.rule_retrieval.Retriever`,
which puts the top ``k`` rules of each route (by embedding similarity of the rule to the task's query, plus
``utility_weight`` × utility) into that task's prompts. The trained turns' prompt token ids therefore contain the
retrieved rules. The pool is read-only here (the trainer never edits rules). The embedder defaults to ``lexical``
(deterministic, no extra dependency) so a resume retrieves the same rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nlgrad.errors import ConfigError
from nlgrad.text.embeddings import load_embedder
from nlgrad.methods.rule_retrieval import Retriever
from nlgrad.policy.memory import PolicyMemory


def rule_pool_hooks(rules: str | None, *, k: int = 4, embedder: str = "lexical") -> dict[str, Any]:
    """``{"policy": PolicyMemory, "policy_for_task": Retriever}`` for :class:`Executor`, or ``{}`` without rules."""
    if not rules:
        return {}
    if not Path(rules).exists():
        raise ConfigError("the rule pool does not exist", field="--rules", value=rules)
    memory = PolicyMemory.load(rules)
    return {"policy": memory, "policy_for_task": Retriever(load_embedder(embedder), k=k)}
