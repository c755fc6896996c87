"""Every advantage estimator on small hand-computed examples (pure Python: no torch needed)."""

import math

import pytest

from nlgrad.trainer import advantages as adv

S = math.sqrt


def close(a, b, tol=1e-4):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return abs(a - b) <= tol


def test_group_normalize_std_mean_and_flat_groups():
    # mean 0.5, population std 0.5
    assert close(adv.group_normalize([1, 0, 0, 1]), [1, -1, -1, 1])
    assert close(adv.group_normalize([1, 0, 0, 1], "mean"), [0.5, -0.5, -0.5, 0.5])
    assert adv.group_normalize([0.3, 0.3, 0.3]) == [0.0, 0.0, 0.0]
    assert adv.group_normalize([]) == []
    with pytest.raises(ValueError):
        adv.group_normalize([1, 2], "max")


def test_grpo_is_group_normalized_return():
    # mean 0.5, std sqrt((0.25 + 0.25 + 0) / 3) = 0.408248
    assert close(adv.grpo_advantages([1.0, 0.0, 0.5]), [0.5 / S(1 / 6), -0.5 / S(1 / 6), 0.0])
    assert close(adv.grpo_advantages([1.0, 0.0, 0.5]), [1.224742, -1.224742, 0.0])
    assert adv.broadcast([0.5, -0.5], [2, 1]) == [[0.5, 0.5], [-0.5]]
    with pytest.raises(ValueError):
        adv.broadcast([1.0], [1, 2])


def test_discounted_and_sparse_rewards():
    assert adv.discounted_returns([0, 0, 1], 0.5) == [0.25, 0.5, 1.0]
    assert adv.discounted_returns([1, 1], 1.0) == [2.0, 1.0]
    assert adv.sparse_rewards(3, 1.0) == [0.0, 0.0, 1.0]
    assert adv.sparse_rewards(0, 1.0) == []
    with pytest.raises(ValueError):
        adv.discounted_returns([1], 1.5)


def test_step_groups_share_anchor_observations():
    # anchor "a" is visited by both episodes (returns 0.5 and 0.0 -> mean 0.25); "b" and "c" are singletons.
    out = adv.step_group_advantages([["a", "b"], ["a", "c"]], [[0.5, 1.0], [0.0, 0.0]])
    assert close(out, [[0.25, 0.0], [-0.25, 0.0]])
    # the same anchor twice in one episode (a loop) belongs to the same step group
    out = adv.step_group_advantages([["a", "a"]], [[1.0, 0.0]])
    assert close(out, [[0.5, -0.5]])
    with pytest.raises(ValueError):
        adv.step_group_advantages([["a"]], [[1.0, 2.0]])


def test_returns_are_discounted_by_environment_steps_not_turns():
    # 3 environment steps, outcome 1 on the last: R = [0.25, 0.5, 1.0] (gamma .5). Turns at steps 0, 1, 1, 2 (two
    # LM calls in state 1 share its return); a turn at step 3 (its action never played) gets 0.
    rewards = adv.outcome_step_rewards(3, 1.0)
    assert rewards == [0.0, 0.0, 1.0]
    assert adv.env_step_returns([0, 1, 1, 2, 3], rewards, 0.5) == [0.25, 0.5, 0.5, 1.0, 0.0]
    # an episode that played no step: the outcome sits on step 0
    assert adv.env_step_returns([0, 0], adv.outcome_step_rewards(0, 0.7), 0.5) == [0.7, 0.7]


def test_gigpo_combines_episode_and_step_advantages():
    # episode advantages (mean-normalized) [0.5, -0.5]; step returns [[0.5, 1.0], [0.0, 0.0]];
    # anchor s0 is shared: [0.5, 0.0] -> [0.25, -0.25]; s1, s2 singletons -> 0. omega = 2.
    out = adv.gigpo_advantages([1.0, 0.0], [["s0", "s1"], ["s0", "s2"]], [[0.5, 1.0], [0.0, 0.0]], omega=2.0)
    assert close(out, [[1.0, 0.5], [-1.0, -0.5]])
    # with std normalization the episode part is +-1 and the step group [0.5, 0.0] becomes [+1, -1]
    out = adv.gigpo_advantages([1.0, 0.0], [["s0", "s1"], ["s0", "s2"]], [[0.5, 1.0], [0.0, 0.0]], omega=1.0,
                               normalize="std")
    assert close(out, [[2.0, 1.0], [-2.0, -1.0]])
    # omega = 0 is GRPO with mean normalization
    assert close(adv.gigpo_advantages([1.0, 0.0], [["x"], ["x"]], [[1.0], [0.0]], omega=0.0), [[0.5], [-0.5]])


def test_first_visit_coverage_counts_distinct_new_observations():
    assert adv.first_visit_coverage(["start", "a", "b", "a", "start"]) == 2
    assert adv.first_visit_coverage(["start"]) == 0
    assert adv.first_visit_coverage([]) == 0


def test_novel_state_rewards_credit_the_steps_that_reach_new_states():
    # steps: start->a (new), a->b (new), b->a (seen), a->start (seen), start->c (new)
    rewards = adv.novel_state_rewards(["start", "a", "b", "a", "start", "c"])
    assert rewards == [1.0, 1.0, 0.0, 0.0, 1.0]
    assert sum(rewards) == adv.first_visit_coverage(["start", "a", "b", "a", "start", "c"])
    assert adv.novel_state_rewards(["start"]) == []


def test_progpo_triggers_on_success_flags_not_on_zero_scores():
    # coverage [1, 3, 2]: mean 2, std sqrt(2/3) = 0.816497
    values, signal = adv.progpo_advantages([0.0, 0.0, 0.0], [False, False, False], [1, 3, 2])
    assert signal == "coverage" and close(values, [-1.224742, 1.224742, 0.0])
    # partial credit, nobody succeeded: still the coverage (the old `score == 0` trigger never fired here)
    values, signal = adv.progpo_advantages([0.4, 0.2, 0.4], [False, False, False], [1, 3, 2])
    assert signal == "coverage" and close(values, [-1.224742, 1.224742, 0.0])
    # one success: the outcome; outcomes [0, 1, 0]: mean 1/3, std sqrt(2)/3
    values, signal = adv.progpo_advantages([0.0, 1.0, 0.0], [False, True, False], [5, 0, 5])
    assert signal == "outcome" and close(values, [-0.707106, 1.414213, -0.707106])
    values, signal = adv.progpo_advantages([0.0, 0.0], [False, False], [2, 2])
    assert signal == "coverage" and values == [0.0, 0.0]


def test_progpo_step_level_credits_novel_state_visits_per_step():
    # all failed. Episode 0: states s, a, b (2 novel steps), turns at steps 0, 1; episode 1: states s, s, a (a loop,
    # then a novel step), turns at steps 0, 1. gamma .5, mean normalization.
    novelty = [adv.novel_state_rewards(["s", "a", "b"]), adv.novel_state_rewards(["s", "s", "a"])]
    assert novelty == [[1.0, 1.0], [0.0, 1.0]]
    # returns by step: ep0 [1 + .5, 1] = [1.5, 1]; ep1 [0 + .5, 1] = [.5, 1]; mean over the four turns 1.0
    values, signal = adv.progpo_step_advantages([0.3, 0.1], [False, False], [[0, 1], [0, 1]], novelty, gamma=0.5,
                                                normalize="mean")
    assert signal == "novelty" and close(values, [[0.5, 0.0], [-0.5, 0.0]])
    # a success in the group: the outcome on every turn ([1, 0] -> [.5, -.5])
    values, signal = adv.progpo_step_advantages([1.0, 0.0], [True, False], [[0, 1], [0, 1]], novelty, gamma=0.5,
                                                normalize="mean")
    assert signal == "outcome" and values == [[0.5, 0.5], [-0.5, -0.5]]


def test_information_gain_is_the_per_turn_log_likelihood_difference():
    assert close(adv.information_gain_rewards([-3.0, -2.0, -2.5]), [1.0, -0.5])
    assert adv.information_gain_rewards([-1.0]) == []


def test_curriculum_weight_schedules():
    assert adv.curriculum_weight(0, 5, start=1.0, end=0.0) == 1.0
    assert close(adv.curriculum_weight(2, 5, start=1.0, end=0.0), 0.5)
    assert adv.curriculum_weight(4, 5, start=1.0, end=0.0) == 0.0
    assert close(adv.curriculum_weight(2, 5, start=1.0, end=0.2, schedule="cosine"), 0.6)
    assert adv.curriculum_weight(3, 5, start=0.7, schedule="constant") == 0.7
    assert adv.curriculum_weight(9, 1, start=0.4) == 0.4


def test_cigpo_normalizes_outcome_and_information_gain_separately():
    # outcome [1, 0] -> [0.5, -0.5] (mean); gains over all turns [1, 0, 0, -1] (mean 0) stay; weight 0.5
    out = adv.cigpo_advantages([1.0, 0.0], [[1.0, 0.0], [0.0, -1.0]], weight=0.5, normalize="mean")
    assert close(out, [[1.0, 0.5], [-0.5, -1.0]])
    # std normalization: the gains' scale does not matter, only their spread relative to each other
    small = adv.cigpo_advantages([1.0, 0.0], [[0.01, 0.0], [0.0, -0.01]], weight=1.0)
    large = adv.cigpo_advantages([1.0, 0.0], [[10.0, 0.0], [0.0, -10.0]], weight=1.0)
    assert close(small, large, tol=1e-3)  # up to eps
    # all outcomes equal: only the information gain orders the turns
    out = adv.cigpo_advantages([0.0, 0.0], [[2.0], [1.0]], weight=1.0, normalize="mean")
    assert close(out, [[0.5], [-0.5]])


def test_cigpo_turns_without_information_gain_get_no_information_advantage():
    gains = [[0.5, 0.0], [0.2, 0.0], [0.0, 0.0], [0.3, 0.1]]
    # by hand: the informative gains are .5, .2, .3, .1 (mean .275); deviations .225, -.075, .025, -.175, squares
    # summing to .0875, population std sqrt(.0875 / 4) = .147902; the six zero-gain turns stay out and get 0.
    std = S(0.0875 / 4)
    ig = [[0.225 / std, 0.0], [-0.075 / std, 0.0], [0.0, 0.0], [0.025 / std, -0.175 / std]]
    assert close(ig, [[1.521278, 0.0], [-0.507093, 0.0], [0.0, 0.0], [0.169031, -1.183216]])
    # outcomes [1, 0, 0, 1] normalize to [1, -1, -1, 1]; weight .5
    out = adv.cigpo_advantages([1.0, 0.0, 0.0, 1.0], gains, weight=0.5)
    outcome = [1.0, -1.0, -1.0, 1.0]
    assert close(out, [[outcome[i] + 0.5 * a for a in ig[i]] for i in range(4)])
    # each zero-gain turn carries exactly the outcome advantage (the old normalization over all eight turns gave
    # it -mean/std = -.1375 / .172753 = -0.80 x weight)
    episode = adv.group_normalize([1.0, 0.0, 0.0, 1.0])
    assert [out[0][1], out[1][1], out[2][0], out[2][1]] == [episode[0], episode[1], episode[2], episode[2]]
