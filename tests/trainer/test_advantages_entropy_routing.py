"""STAPO's entropy outliers within anchor groups and IAPO's routing-weight split, on hand-computed numbers."""

import math

from nlgrad.trainer.advantages_entropy import entropy_outliers, stapo_advantages
from nlgrad.trainer.advantages_routing import iapo_advantages, routing_weights


def close(a, b, tol=1e-5):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return abs(a - b) <= tol


ANCHORS = [["x", "y"], ["x"], ["x"]]
ENTROPIES = [[1.0, 0.5], [2.0], [3.0]]


def test_entropy_outliers_within_anchor_groups():
    # anchor x: [1, 2, 3], mean 2, std sqrt(2/3) = .816497 -> z = -1.2247, 0, 1.2247; y alone: never an outlier
    assert entropy_outliers(ANCHORS, ENTROPIES, z_threshold=1.0) == [[True, False], [False], [True]]
    assert entropy_outliers(ANCHORS, ENTROPIES, z_threshold=1.3) == [[False, False], [False], [False]]
    # a turn without entropy neither counts nor is flagged: x = [2, 3] -> |z| = 1 exactly, not above 1
    assert entropy_outliers(ANCHORS, [[None, 0.5], [2.0], [3.0]], z_threshold=1.0) == [[False, False], [False],
                                                                                        [False]]


def test_stapo_scales_outlier_advantages():
    # GRPO (std) of [1, 0, 0]: mean 1/3, std sqrt(2/9) -> [1.414214, -.707107, -.707107]
    out, n = stapo_advantages([1.0, 0.0, 0.0], ANCHORS, ENTROPIES, z_threshold=1.0, scale=0.5)
    assert n == 2
    assert close(out, [[0.707107, 1.414214], [-0.707107], [-0.353553]], tol=1e-4)
    out, n = stapo_advantages([1.0, 0.0, 0.0], ANCHORS, ENTROPIES, z_threshold=1.0, scale=1.0)
    assert close(out, [[1.414214, 1.414214], [-0.707107], [-0.707107]], tol=1e-4)


def test_iapo_splits_the_episode_advantage_by_routing_weights():
    supported, failed = [[2, 0, 1], [0, 1]], [[0, 1, 0], [3, 1]]
    assert routing_weights(0.5, supported[0], failed[0]) == [3.0, 1.0, 2.0]
    assert routing_weights(-0.5, supported[1], failed[1]) == [4.0, 2.0]
    out = iapo_advantages([1.0, 0.0], supported, failed, coef=1.0, normalize="mean")
    # GRPO (mean): [.5, -.5]; episode 0 (positive): .5 * 3 * [3, 1, 2] / 6; episode 1 (negative): -.5 * 2 * [4, 2] / 6
    assert close(out, [[0.75, 0.25, 0.5], [-2 / 3, -1 / 3]])
    assert close(sum(out[0]), 3 * 0.5) and close(sum(out[1]), 2 * -0.5)  # the episode's total is GRPO's
    assert close(iapo_advantages([1.0, 0.0], supported, failed, coef=0.0, normalize="mean"),
                 [[0.5] * 3, [-0.5] * 2])
    assert iapo_advantages([1.0, 1.0], supported, failed) == [[0.0] * 3, [0.0] * 2]
    assert math.isclose(out[1][0] / out[1][1], 2.0)
