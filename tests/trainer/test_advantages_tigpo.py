"""TIGPO's per-task anchor statistics across steps, their checkpoint round trip and task revisits, on hand-computed
numbers (no torch)."""

import json
import math

from nlgrad.trainer.advantages_tigpo import TaskAnchorStats, revisit_slots, revisit_tasks, tigpo_advantages


def close(a, b, tol=1e-5):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return abs(a - b) <= tol


def test_anchor_statistics_carry_across_steps():
    stats = TaskAnchorStats()
    # step 1: anchor a seen by both episodes (returns .5, 0 -> mean .25); b and c once each (no step signal yet)
    out = tigpo_advantages("k", stats, [1.0, 0.0], [["a", "b"], ["a", "c"]], [[0.5, 1.0], [0.0, 0.0]],
                           omega=1.0, normalize="mean")
    assert close(out, [[0.5 + 0.25, 0.5], [-0.5 - 0.25, -0.5]])
    # step 2: a flat group (GRPO and GiGPO give 0) still learns from b's history: b = [1, 0, 0], mean 1/3
    out = tigpo_advantages("k", stats, [0.0, 0.0], [["b"], ["b"]], [[0.0], [0.0]], omega=1.0, normalize="mean")
    assert close(out, [[-1 / 3], [-1 / 3]])
    assert stats.moments("k", "b")[0] == 3
    # std normalization: population std of [1, 0, 0] is sqrt(2/9); (0 - 1/3) / sqrt(2/9) = -0.707107
    copy = TaskAnchorStats.from_dict(json.loads(json.dumps(stats.to_dict())))
    count, mean, std = copy.moments("k", "b")
    assert (count, close(mean, 1 / 3), close(std, math.sqrt(2 / 9))) == (3, True, True)
    out = tigpo_advantages("k", copy, [0.0, 0.0], [["b"], ["z"]], [[0.0], [0.0]], omega=2.0, normalize="std")
    # b now [1, 0, 0, 0]: mean .25, std sqrt(3/16) = .433013 -> (0 - .25) / .433013 = -.577350, x omega 2
    assert close(out, [[-1.154700], [0.0]])
    # statistics are per task: another task's anchor a starts empty
    assert stats.moments("other", "a") == (0, 0.0, 0.0)


def test_revisits_take_a_share_of_slots_from_earlier_tasks():
    assert [revisit_slots(s, 4) for s in (0.0, 0.25, 0.5, 1.0)] == [0, 1, 2, 3]
    assert revisit_slots(0.5, 1) == 0
    stats = TaskAnchorStats()
    for task in ("t1", "t2", "t3"):
        stats.add(task, "a", 1.0)
    picked = revisit_tasks(stats, ["t1", "t9"], 2, seed=0, step=3)
    assert sorted(picked) == ["t2", "t3"]  # only earlier tasks, never one of the fresh draw
    assert revisit_tasks(stats, ["t1"], 1, seed=0, step=3) == revisit_tasks(stats, ["t1"], 1, seed=0, step=3)
    assert revisit_tasks(stats, ["t1"], 0, seed=0, step=3) == []
    assert revisit_tasks(TaskAnchorStats(), [], 2, seed=0, step=0) == []
