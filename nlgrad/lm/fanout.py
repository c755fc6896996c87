"""Run independent LM-bound calls concurrently, results in input order.

A local server with several slots (or a hosted API) answers calls side by side; a loop that waits for each reply in
turn leaves them idle. ``fan_out(fn, items, workers)`` is ``[fn(x) for x in items]`` on up to ``workers`` threads;
the LM client's own per-model limit still bounds what is in flight. An exception in any call is raised after the
others finish, as the list comprehension would raise it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def fan_out(fn: Callable[[T], R], items: Iterable[T], workers: int) -> list[R]:
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="nlgrad-fanout") as pool:
        return list(pool.map(fn, items))
