"""A task's persistent state-transition graph (TIGPO), and the values it assigns to states and transitions (pure
Python, no torch).

Nodes are the environment's own state keys; an edge ``u -> s`` is a transition some episode of the task made, by any
policy version. Every edge keeps how often it was taken (``count``), the rewards received on it (``reward_sum``: the
episode's outcome on its last environment step, GiGPO's sparse step reward) and how often the episode went on after
it (``continued``; the other times the episode ended there). The graph only grows; it is a structural and detached
statistical reference, never replayed in the loss.

Values, by value iteration over the whole graph (``gamma`` per environment step):

``Q(u -> s) = reward_sum / count + gamma * (continued / count) * V(s)``
``V(u) = sum_e count(e) * Q(e) / sum_e count(e)`` over the edges out of ``u`` (0 for a state nothing left)

so ``V(u)`` is what the transitions observed from ``u``, by every policy so far, led to on average, and
``Q(u -> s) - V(u)`` is how much better one transition did than the average way out of ``u``. The iteration starts at
``V = 0`` and stops when no value moves by more than ``1e-12`` (or after ``max_sweeps``); with ``gamma < 1`` it
converges, and on an acyclic graph it is exact after as many sweeps as the longest path.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence


class TransitionGraph:
    """``{(u, s): [count, reward_sum, continued]}`` of one task."""

    def __init__(self, edges: Iterable[Sequence[Any]] = ()):
        self.edges: dict[tuple[str, str], list[float]] = {}
        for u, s, count, reward_sum, continued in edges:
            self.edges[(str(u), str(s))] = [int(count), float(reward_sum), int(continued)]

    def add_episode(self, states: Sequence[str], step_rewards: Sequence[float]) -> None:
        """Add the transitions of one episode: ``states[k] -> states[k + 1]`` with reward ``step_rewards[k]``."""
        transitions = list(zip(states, states[1:]))
        if len(step_rewards) < len(transitions):
            raise ValueError("one reward per environment step is needed")
        for k, (u, s) in enumerate(transitions):
            entry = self.edges.setdefault((str(u), str(s)), [0, 0.0, 0])
            entry[0] += 1
            entry[1] += float(step_rewards[k])
            entry[2] += int(k + 1 < len(transitions))

    def values(self, gamma: float, *, max_sweeps: int = 1000, tol: float = 1e-12) -> dict[str, float]:
        """``{state: V(state)}`` for every state of the graph (see the module docstring)."""
        out_edges: dict[str, list[tuple[str, list[float]]]] = {}
        nodes: set[str] = set()
        for (u, s), entry in self.edges.items():
            out_edges.setdefault(u, []).append((s, entry))
            nodes.update((u, s))
        ordered = sorted(nodes)
        value = {n: 0.0 for n in ordered}
        for _ in range(max_sweeps):
            moved = 0.0
            for u in ordered:
                edges = out_edges.get(u)
                if not edges:
                    continue
                total = sum(entry[0] for _, entry in edges)
                new = sum(entry[0] * self._q(entry, value[s], gamma) for s, entry in edges) / total
                moved = max(moved, abs(new - value[u]))
                value[u] = new
            if moved <= tol:
                break
        return value

    def q_value(self, u: str, s: str, values: dict[str, float], gamma: float) -> float:
        entry = self.edges.get((str(u), str(s)))
        return 0.0 if entry is None else self._q(entry, values.get(str(s), 0.0), gamma)

    @staticmethod
    def _q(entry: list[float], next_value: float, gamma: float) -> float:
        count, reward_sum, continued = entry
        return reward_sum / count + gamma * (continued / count) * next_value

    def to_list(self) -> list[list[Any]]:
        return [[u, s, *entry] for (u, s), entry in sorted(self.edges.items())]
