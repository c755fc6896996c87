"""The environment's own state of every observation of an episode, recorded beside the trace.

GiGPO's anchor groups and ProGPO's novel-state visits need to know when two observations are *the same environment
state*. The prompt is a poor key: ``twx_react`` reorders and trims the shown actions by history, so one state is
rendered several ways. Environments say which state they are in through ``Observation.info["state_key"]`` (TWX:
the room's look text; ScienceWorld: look + inventory), but the trace's environment nodes keep only the observation
text and valid actions. So the trainer runs the executor on a :class:`RecordingBenchmark`, whose environments log
the state key of the reset observation and of every step's observation into a thread-local :class:`StateLog`
(the executor keeps one environment per worker thread and runs an episode in one thread).

Contract: after an episode, ``log.states()[0]`` is the state after reset and ``log.states()[k]`` the state after
environment step k, one entry per ``env`` node of the trace, in order. An observation without a ``state_key`` is
keyed by its text (whitespace-normalized) plus the environment's full, sorted valid-action list.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from nlgrad.runtime.protocols import Observation, StepResult, Task


def state_key_of(observation: Observation) -> str:
    """The environment's state key of an observation (its ``info["state_key"]``), else text + sorted actions."""
    info = getattr(observation, "info", None) or {}
    if info.get("state_key") is not None:
        return "state:" + str(info["state_key"])
    text = " ".join(str(observation.text).split())
    digest = hashlib.sha1(json.dumps([text, sorted(map(str, observation.valid_actions or []))]).encode())
    return "obs:" + digest.hexdigest()[:16]


class StateLog:
    """Per-thread list of the state keys of the episode running in that thread."""

    def __init__(self) -> None:
        self._local = threading.local()

    def begin(self) -> None:
        """Start a new episode in this thread (forget the previous one's states)."""
        self._local.states = []

    def record(self, key: str) -> None:
        if not hasattr(self._local, "states"):
            self._local.states = []
        self._local.states.append(key)

    def states(self) -> list[str]:
        return list(getattr(self._local, "states", []))


class RecordingEnv:
    """An environment that logs the state key of every observation it returns (reset and successful steps)."""

    def __init__(self, env: Any, log: StateLog):
        self.env, self.log = env, log

    def reset(self, task: Task) -> Observation:
        observation = self.env.reset(task)
        self.log.begin()
        self.log.record(state_key_of(observation))
        return observation

    def step(self, action: str) -> StepResult:
        result = self.env.step(action)
        self.log.record(state_key_of(result.observation))
        return result

    def close(self) -> None:
        self.env.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)


class RecordingBenchmark:
    """The benchmark, unchanged, except that its environments are :class:`RecordingEnv`\\ s writing to ``log``."""

    def __init__(self, benchmark: Any, log: StateLog):
        self._benchmark, self.log = benchmark, log

    def make_env(self) -> RecordingEnv:
        return RecordingEnv(self._benchmark.make_env(), self.log)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._benchmark, name)
