"""The test-split guard: whatever learns (an optimize method, the companion trainer) never sees a test task.

Learning code passes the tasks it is about to roll out through :func:`guard_not_test`; the held-out test split is
only ever run by the final evaluation (``nlgrad optimize``'s, ``nlgrad compare``'s, the trainer's ``test_n``)."""

from __future__ import annotations

from nlgrad.errors import NlgradError
from nlgrad.runtime.protocols import Task


class TestSplitLeak(NlgradError):
    """Something that learns tried to roll out a task of the held-out test split."""

    __test__ = False  # not a pytest test class


def guard_not_test(tasks: list[Task]) -> list[Task]:
    """``tasks`` itself; a :class:`TestSplitLeak` naming one when any of them is a test-split task."""
    leaked = [t.id for t in tasks if t.split == "test"]
    if leaked:
        raise TestSplitLeak(f"optimizers never see the test split; got test tasks such as {leaked[0]!r}")
    return tasks
