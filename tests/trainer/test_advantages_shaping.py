"""HiDiffTIR's difficulty/route scaling and MileGPO's milestone/trap shaping on hand-computed examples (no torch)."""

import math

from nlgrad.trainer import advantages as adv
from nlgrad.trainer.advantages_difficulty import group_difficulty, hidifftir_advantages, route_failure_rates
from nlgrad.trainer.advantages_milestones import milegpo_advantages, milestone_step_rewards, milestone_values


def close(a, b, tol=1e-5):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return abs(a - b) <= tol


def test_route_failure_rates_and_group_difficulty():
    pairs = [("act", True), ("act", True), ("act", False), ("verify", False), ("act", False), ("verify", False)]
    assert route_failure_rates(pairs) == {"act": 0.5, "verify": 1.0}
    assert group_difficulty([1.0, 0.0, 0.0, 0.0]) == 0.75
    assert group_difficulty([1.0, 1.0]) == 0.0 and group_difficulty([]) == 0.0


def test_hidifftir_scales_grpo_by_difficulty_and_route_failure():
    scores = [1.0, 0.0, 0.0, 0.0]
    routes = [["act", "act"], ["act", "verify"], ["act"], ["verify"]]
    rates = {"act": 0.5, "verify": 1.0}
    # GRPO: mean .25, std sqrt(.1875) = .433013 -> [1.732051, -.577350 x3]; difficulty .75 -> group scale 1.75;
    # route scales: act 1 + .5 = 1.5, verify 1 + 1 = 2
    win, loss = 0.75 / (math.sqrt(0.1875) + adv.EPS), -0.25 / (math.sqrt(0.1875) + adv.EPS)
    assert close([win, loss], [1.732051, -0.577350])
    out = hidifftir_advantages(scores, routes, rates)
    assert close(out, [[win * 1.75 * 1.5] * 2, [loss * 1.75 * 1.5, loss * 1.75 * 2], [loss * 1.75 * 1.5],
                       [loss * 1.75 * 2]])
    assert close(out[0][0], 4.546633, tol=1e-4) and close(out[1][1], -2.020726, tol=1e-4)
    # both weights 0: GRPO on every turn
    grpo = adv.grpo_advantages(scores)
    assert hidifftir_advantages(scores, routes, rates, difficulty_weight=0.0, route_weight=0.0) == \
        [[grpo[i]] * len(r) for i, r in enumerate(routes)]


def test_milestones_and_traps_from_successes_and_failures():
    states = [["s", "m", "w"], ["s", "m", "t"], ["s", "t", "t2", "t"]]
    successes = [True, False, False]
    values = milestone_values(states, successes)
    # group success rate 1/3; m: 1 of 2 visitors won -> 1/2 - 1/3; w: 1 of 1 -> 2/3; t: 0 of 2, t2: 0 of 1 -> -1/3
    assert close([values["m"], values["w"], values["t"], values["t2"]], [1 / 6, 2 / 3, -1 / 3, -1 / 3])
    assert "s" not in values  # the start state is no anchor
    # the first step reaching a state earns its value; the revisit of t earns 0
    assert close(milestone_step_rewards(states[2], values), [-1 / 3, -1 / 3, 0.0])
    # an all-failed (or all-won) group has no milestones or traps
    assert set(milestone_values(states, [False] * 3).values()) == {0.0}


def test_milegpo_adds_the_discounted_milestone_return_to_grpo():
    states = [["s", "m", "w"], ["s", "m", "t"], ["s", "t", "t2", "t"]]
    # step rewards: E0 [1/6, 2/3], E1 [1/6, -1/3], E2 [-1/3, -1/3, 0]; gamma .5, turns at steps 0, 1(, 2):
    # returns E0 [1/6 + 1/3, 2/3] = [1/2, 2/3]; E1 [1/6 - 1/6, -1/3] = [0, -1/3]; E2 [-1/2, -1/3, 0]
    # GRPO (mean) of scores [1, 0, 0]: [2/3, -1/3, -1/3]
    out = milegpo_advantages([1.0, 0.0, 0.0], [True, False, False], states, [[0, 1], [0, 1], [0, 1, 2]], coef=1.0,
                             gamma=0.5, normalize="mean")
    assert close(out, [[7 / 6, 4 / 3], [-1 / 3, -2 / 3], [-5 / 6, -2 / 3, -1 / 3]])
    # coef 0 is GRPO
    out = milegpo_advantages([1.0, 0.0, 0.0], [True, False, False], states, [[0, 1], [0, 1], [0, 1, 2]], coef=0.0,
                             gamma=0.5, normalize="mean")
    assert close(out, [[2 / 3] * 2, [-1 / 3] * 2, [-1 / 3] * 3])
