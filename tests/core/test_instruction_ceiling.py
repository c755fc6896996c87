"""scripts/instruction_ceiling.py: what fixing every failed instruction of one type would add to the mean."""

from __future__ import annotations

from script_modules import load_script

ceiling = load_script("instruction_ceiling")


def _task(score: float, *followed: tuple[str, bool]) -> dict:
    return {"score": score, "details": {"instructions": [{"id": i, "followed": f} for i, f in followed]}}


def test_ceiling_weights_each_failure_by_its_tasks_share_of_the_mean():
    results = [_task(0.5, ("a", False), ("b", True)), _task(0.0, ("a", False)), _task(1.0, ("b", True))]
    mean, gain, failing = ceiling.ceilings(results)
    assert abs(mean - 0.5) < 1e-9
    assert abs(gain["a"] - (1 / 2 + 1) / 3) < 1e-9  # half of task 1 and all of task 2, over 3 tasks
    assert failing == {"a": 2} and "b" not in gain
    assert abs(mean + sum(gain.values()) - 1.0) < 1e-9  # fixing everything reaches 1
