"""Rule retrieval: each task sees only the top-``k`` rules per route of a rule pool (a :class:`PolicyMemory`).

Used by JERP (:mod:`nlgrad.methods.jerp`) for its rollouts, gate and test, by ``nlgrad eval`` for a policy whose
``selection`` is ``retrieval``, and by the companion trainer's ``--rules`` (:func:`rule_pool_hooks`) for the prompts
it trains on. Rules are ranked by embedding
similarity between the task's query and the rule plus a small utility bonus, once at the task's first prompt, and
stay fixed for the episode; what was retrieved is recorded in the trace (``graph["jerp"]``, and on each module
call's node as the entries it was shown). The ranking is the policy layer's
:class:`~nlgrad.policy.relevance.RetrievalSelector`, the same one that ``nlgrad policy render --for-input`` and
``nlgrad eval`` use for a policy whose ``selection`` is ``retrieval`` (:func:`retrieval_selection`), so a rule pool
applies to a deployed prompt as it did in JERP's runs.

The runtime owns it because several layers use it: it imports neither JERP nor the trainer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from nlgrad.errors import ConfigError
from nlgrad.policy import PolicyMemory
from nlgrad.policy.relevance import RetrievalSelector
from nlgrad.policy.schema import PolicyEntry, Selection
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.trace import Trace
from nlgrad.text import clip
from nlgrad.text.embeddings import Embedder, load_embedder


def task_query(task: Task, ctx=None, max_chars: int = 600) -> str:
    """Text describing a task: its string inputs and, once the environment was reset, the first observation."""
    parts = [f"{v}" for v in task.inputs.values() if isinstance(v, (str, int, float))]
    episode = getattr(ctx, "episode", None)
    first = getattr(episode, "first_observation", None)
    if first is not None:
        parts += [str(first.info.get("task", "")), first.text]
    return clip(" ".join(p for p in parts if p), max_chars)


def rank_rules(query: str, rules: list[PolicyEntry], embedder: Embedder, *, k: int,
               utility_weight: float = 0.1) -> list[tuple[PolicyEntry, float]]:
    """Top ``k`` rules by cosine(query, rule) + utility_weight * u / (1 + |u|) (u = utility); ties: rule id."""
    return RetrievalSelector(embedder.embed, k=k, utility_weight=utility_weight).ranked(rules, query)


def retrieval_selection(embedder: Embedder, *, k: int, utility_weight: float) -> Selection:
    """The ``selection`` JERP records in the policies it writes, so every reader retrieves as its runs did."""
    return Selection(kind="retrieval", k=k, utility_weight=utility_weight,
                     embedder=EMBEDDER_KINDS.get(getattr(embedder, "name", ""), "auto"))


class TaskPolicy:
    """The policy one task sees: per route, the top-k rules for this task, chosen at first use and then fixed."""

    def __init__(self, memory: PolicyMemory, embedder: Embedder, *, k: int, utility_weight: float,
                 query_fn: Callable[[], str], trace: Trace | None = None):
        self.memory, self.embedder, self.k, self.utility_weight = memory, embedder, k, utility_weight
        self._query_fn, self.trace = query_fn, trace
        self.query: str | None = None
        self.retrieved: dict[str, list[str]] = {}
        self._text: dict[str, str] = {}
        self._record()

    def render(self, route: str) -> str:
        return self.render_shown(route, "")[0]

    def render_shown(self, route: str, for_input: str) -> tuple[str, list[str]]:  # noqa: ARG002 - the task's query
        """The route's top-k rules for this task (chosen by the task's query, not the call's input) and their ids."""
        if route not in self._text:
            if self.query is None:
                self.query = self._query_fn()
            selector = RetrievalSelector(self.embedder.embed, k=self.k, utility_weight=self.utility_weight)
            self._text[route], self.retrieved[route] = self.memory.render_shown(route, self.query, selector)
            self._record()
        return self._text[route], list(self.retrieved[route])

    def _record(self) -> None:
        """Keep ``trace.graph["jerp"]`` (query and retrieved rule ids per route) up to date."""
        if self.trace is not None:
            self.trace.graph.graph["jerp"] = {"query": self.query or "", "retrieved": dict(self.retrieved)}


class RetrievingPolicy:
    """A rule pool as a policy source. ``for_task(task)`` is what a task should see; ``render(route)`` alone (no
    task known) falls back to the whole route, as plain policy memory does."""

    def __init__(self, memory: PolicyMemory, embedder: Embedder, *, k: int = 4, utility_weight: float = 0.1):
        self.memory, self.embedder, self.k, self.utility_weight = memory, embedder, k, utility_weight

    def render(self, route: str) -> str:
        return self.memory.render(route)

    def for_task(self, task: Task, ctx=None, query_fn: Callable[[], str] | None = None) -> TaskPolicy:
        """The policy of one task. The query is built at the first render (after an environment reset, so it can
        include the first observation from ``ctx``) unless ``query_fn`` is given; what is retrieved is recorded in
        ``ctx.trace`` when there is one."""
        return TaskPolicy(self.memory, self.embedder, k=self.k, utility_weight=self.utility_weight,
                          query_fn=query_fn or (lambda: task_query(task, ctx)), trace=getattr(ctx, "trace", None))


EMBEDDER_KINDS = {"lexical": "lexical", "all-MiniLM-L6-v2": "minilm"}  # Embedder.name -> load_embedder kind


class Retriever:
    """The executor's per-task policy hook for JERP: ``hook(task, ctx)`` turns the run's policy memory
    (``ctx.policy``) into the :class:`TaskPolicy` of that task; any other policy source is left as it is.

    Pickles light for Ray workers: a built-in embedder travels as its kind and is loaded once per worker process."""

    def __init__(self, embedder: Embedder, *, k: int = 4, utility_weight: float = 0.1):
        self._embedder, self.k, self.utility_weight = embedder, k, utility_weight
        self.kind = EMBEDDER_KINDS.get(getattr(embedder, "name", ""))

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = load_embedder(self.kind)
        return self._embedder

    def __call__(self, task: Task, ctx):
        if not isinstance(ctx.policy, PolicyMemory):
            return ctx.policy
        policy = RetrievingPolicy(ctx.policy, self.embedder, k=self.k, utility_weight=self.utility_weight)
        return policy.for_task(task, ctx)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self.kind:
            state["_embedder"] = None
        return state


def retrieved_ids(trace: Trace | None) -> list[str]:
    info = trace.graph.graph.get("jerp", {}) if trace is not None else {}
    return [i for ids in (info.get("retrieved") or {}).values() for i in ids]


def rule_pool_hooks(rules: str | None, *, k: int = 4, embedder: str = "lexical") -> dict[str, Any]:
    """The companion trainer's ``--rules``: ``{"policy": PolicyMemory, "policy_for_task": Retriever}`` for
    :class:`~nlgrad.runtime.executor.Executor` (the latest version of the policy directory ``rules``, or one policy
    file), or ``{}`` without rules. The pool is read-only there (the trainer never edits rules); the embedder defaults
    to ``lexical`` (deterministic, no extra dependency), so a resume retrieves the same rules."""
    if not rules:
        return {}
    if not Path(rules).exists():
        raise ConfigError("the rule pool does not exist", field="--rules", value=rules)
    return {"policy": PolicyMemory.load(rules), "policy_for_task": Retriever(load_embedder(embedder), k=k)}
