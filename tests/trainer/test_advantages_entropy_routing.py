"""STAPO's entropy outliers within anchor groups and their reward/penalty treatment, and IAPO's routing-weight split,
on hand-computed numbers."""

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


def test_stapo_outliers_get_a_trajectory_aware_reward_minus_a_trajectory_independent_penalty():
    # GRPO (std) of [1, 0, 0]: mean 1/3, std sqrt(2/9) -> [1.414214, -.707107, -.707107]; outliers (anchor x): the
    # won episode's first turn and the third episode's turn. Outlier = .5 * A_grpo - .5; the rest keep A_grpo.
    out, n = stapo_advantages([1.0, 0.0, 0.0], ANCHORS, ENTROPIES, z_threshold=1.0, reward_coef=0.5, penalty=0.5)
    assert n == 2
    assert close(out, [[0.207107, 1.414214], [-0.707107], [-0.853553]], tol=1e-4)
    # the won episode's outlier is not simply reinforced: below its episode's ordinary turn by .5 * 1.414 + .5
    assert out[0][0] < out[0][1] - 1.2
    # reward_coef 1, penalty 0 is GRPO
    out, _ = stapo_advantages([1.0, 0.0, 0.0], ANCHORS, ENTROPIES, z_threshold=1.0, reward_coef=1.0, penalty=0.0)
    assert close(out, [[1.414214, 1.414214], [-0.707107], [-0.707107]], tol=1e-4)


def test_stapo_penalty_is_independent_of_the_trajectory():
    # a flat group (every score 1: GRPO advantage 0 everywhere) still pushes its outliers down by the penalty alone
    out, n = stapo_advantages([1.0, 1.0, 1.0], ANCHORS, ENTROPIES, z_threshold=1.0, reward_coef=0.5, penalty=0.3)
    assert n == 2 and close(out, [[-0.3, 0.0], [0.0], [-0.3]])


def test_stapo_reward_follows_the_trajectory_of_the_outlier():
    # the same outlier pattern, the outcome swapped (episode 2 won): the reward moves with the trajectory.
    # GRPO (mean) of [0, 0, 1]: [-1/3, -1/3, 2/3]; outliers: .5 * A - .2
    won_last, _ = stapo_advantages([0.0, 0.0, 1.0], ANCHORS, ENTROPIES, reward_coef=0.5, penalty=0.2,
                                   normalize="mean")
    assert close(won_last, [[-1 / 6 - 0.2, -1 / 3], [-1 / 3], [1 / 3 - 0.2]])
    won_first, _ = stapo_advantages([1.0, 0.0, 0.0], ANCHORS, ENTROPIES, reward_coef=0.5, penalty=0.2,
                                    normalize="mean")
    assert close(won_first, [[1 / 3 - 0.2, 2 / 3], [-1 / 3], [-1 / 6 - 0.2]])


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
