"""Feedback text shared by the text-game benchmarks (TextWorldExpress, ScienceWorld): how an episode ended and
what the agent last did."""

from __future__ import annotations

from nlgrad.runtime.protocols import Episode


def episode_outcome(episode: Episode, *, ended: str, without: str, before: str) -> str:
    """"succeeded in N steps", or why the episode failed: ``ended`` (who ended it) "ended after N steps without
    ``without``", "ran out of steps (cap N) before ``before``", or "the agent stopped after N steps"."""
    if episode.success:
        return f"succeeded in {episode.steps} steps"
    if episode.done:
        return f"failed: {ended} ended after {episode.steps} steps without {without}"
    if episode.stopped_by_cap:
        return f"failed: ran out of steps (cap {episode.steps}) before {before}"
    return f"failed: the agent stopped after {episode.steps} steps"


def last_moves(episode: Episode, last_message: str) -> str:
    """The episode's last 8 actions and the first 400 characters of the last game message."""
    recent = ", ".join(episode.actions[-8:]) or "(none)"
    return f"Last actions: {recent}. Last game message: {last_message[:400]}"
