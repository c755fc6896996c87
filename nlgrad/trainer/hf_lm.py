"""An LM object for nlgrad's executor whose ``complete`` calls the learner model in-process.

It implements what :class:`nlgrad.runtime.context.RunContext` and :class:`~nlgrad.runtime.executor.Executor` use
from :class:`nlgrad.lm.client.LM` — ``complete(role, messages, **kw) -> Completion``, ``model_for(role)`` and a
``ledger`` — so the *same* program (same templates, parsers, action matching) runs with the trained weights:
- ``mode="sample"`` (training rollouts): softmax sampling at the training temperature; every call is recorded as a
  :class:`SampledTurn` (prompt and completion token ids) for the weight update;
- ``with lm.guided(hint):`` (ActGuide-RL) samples this thread's calls from the prompt with ``hint`` appended to its
  last message (:func:`with_hint`) but records the *unguided* prompt's token ids, so those turns are trained with
  log-probs under the prompt the model sees without help;
- ``mode="greedy"`` (evaluation): temperature 0 unless the module asks for another, like ``nlgrad eval``'s default
  agent role (temperature 0.0), so scores are comparable with the served-model path.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from nlgrad.lm.client import Completion
from nlgrad.lm.ledger import Ledger
from nlgrad.trainer.learner_model import LearnerModel

DEFAULT_MAX_TOKENS = 64


@dataclass
class SampledTurn:
    messages: list[dict[str, str]]
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    entropy: float | None = None  # mean sampling entropy of the completion's tokens
    guided: bool = False  # sampled under a plan hint; prompt_ids are the *unguided* prompt's


def with_hint(messages: list[dict[str, str]], hint: str) -> list[dict[str, str]]:
    """``messages`` with ``hint`` appended to the last message's content (a blank line between)."""
    if not messages:
        return [{"role": "user", "content": hint}]
    last = dict(messages[-1])
    last["content"] = f"{last.get('content', '')}\n\n{hint}"
    return [*messages[:-1], last]


class LearnerLM:
    """The learner model as an nlgrad LM (see the module docstring)."""

    def __init__(self, learner_model: LearnerModel, *, name: str = "hf/learner", mode: str = "greedy",
                 temperature: float = 1.0, max_tokens_cap: int | None = None,
                 default_max_tokens: int = DEFAULT_MAX_TOKENS):
        if mode not in ("sample", "greedy"):
            raise ValueError(f"mode must be 'sample' or 'greedy', got {mode!r}")
        self.learner_model, self.name, self.mode = learner_model, name, mode
        self.temperature, self.max_tokens_cap, self.default_max_tokens = temperature, max_tokens_cap, default_max_tokens
        self.ledger = Ledger()
        self._turns: dict[int, list[SampledTurn]] = {}  # by thread: one episode runs in one thread
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextmanager
    def guided(self, hint: str):
        """Sample this thread's calls under ``hint`` (see the module docstring); restores the previous hint."""
        previous = getattr(self._local, "hint", None)
        self._local.hint = hint
        try:
            yield self
        finally:
            self._local.hint = previous

    def model_for(self, role: str) -> str:  # noqa: ARG002 - one model plays the agent role
        return self.name

    def constrains_json(self, role: str) -> bool:  # noqa: ARG002
        """No decoding grammar: the learner samples freely (the PPO ratio is over the unconstrained softmax)."""
        return False

    def take_turns(self) -> list[SampledTurn]:
        """The turns this thread sampled since its last call (one episode, when called after each episode)."""
        with self._lock:
            return self._turns.pop(threading.get_ident(), [])

    def complete(self, role: str, messages: list[dict[str, str]], *, sample_index: int = 0,
                 temperature: float | None = None, max_tokens: int | None = None, stop: list[str] | None = None,
                 seed: int | None = None, deadline: float | None = None, **extra: Any) -> Completion:  # noqa: ARG002
        if self.mode == "sample":
            temp = self.temperature
        else:
            temp = 0.0 if temperature is None else float(temperature)
        limit = max_tokens or self.default_max_tokens
        if self.max_tokens_cap:
            limit = min(limit, self.max_tokens_cap)
        start = time.monotonic()
        with self._lock:
            prompt_ids = self.learner_model.encode_chat(messages)
            hint = getattr(self._local, "hint", None) if self.mode == "sample" else None
            sample_ids = self.learner_model.encode_chat(with_hint(messages, hint)) if hint else prompt_ids
            completion_ids, text = self.learner_model.sample(sample_ids, max_new_tokens=limit, temperature=temp,
                                                             stop=stop)
            if self.mode == "sample":
                self._turns.setdefault(threading.get_ident(), []).append(
                    SampledTurn(list(messages), prompt_ids, completion_ids, text,
                                entropy=getattr(self.learner_model, "last_entropy", None), guided=bool(hint)))
        latency = time.monotonic() - start
        self.ledger.record(role, cached=False, prompt_tokens=len(prompt_ids), completion_tokens=len(completion_ids),
                           wall_s=latency)
        return Completion(text=text, model=self.name, prompt_tokens=len(prompt_ids),
                          completion_tokens=len(completion_ids), latency_s=latency)

    def structured(self, role: str, messages: list[dict[str, str]], schema, **kwargs):
        from nlgrad.lm.structured import parse_structured

        return parse_structured(self, role, messages, schema, **kwargs)
