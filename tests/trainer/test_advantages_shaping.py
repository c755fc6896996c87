"""HiDiffTIR's difficulty/route scaling and MileGPO's milestone discovery, reliability calibration and
progress-contrastive calibration on hand-computed examples (no torch)."""

import math

from nlgrad.trainer import advantages as adv
from nlgrad.trainer.advantages_difficulty import group_difficulty, hidifftir_advantages, route_failure_rates
from nlgrad.trainer.advantages_milestones import (candidate_values, group_evidence, milegpo_advantages,
                                                  milestone_step_rewards, milestone_values)


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


STATES = [["s", "m", "w"], ["s", "m", "t"], ["s", "t", "t2", "t"]]


def test_milestone_discovery_keeps_success_states_and_recurring_failure_states():
    values = milestone_values(STATES, [True, False, False])
    # p = 1/3; m: 1 of 2 visitors won (rate 1/2), w: 1 of 1, t: 0 of 2 (recurs on failures), t2: 0 of 1 (once: no trap)
    # RCS, prior 1: v = n / (n + 1) * (rate - p) -> m 2/3 * 1/6, w 1/2 * 2/3, t 2/3 * -1/3
    assert close([values["m"], values["w"], values["t"]], [1 / 9, 1 / 3, -2 / 9])
    assert "s" not in values and "t2" not in values  # the start is no anchor; a failure state seen once is no trap
    # an all-failed (or all-won) group has no milestones or traps
    assert milestone_values(STATES, [False] * 3) == {} and milestone_values(STATES, [True] * 3) == {}


def test_reliability_calibration_down_weights_a_state_seen_once():
    # two successes and two failures (p = 1/2): a is on both successes, b and c on one each, d on both failures
    states = [["s", "a", "b"], ["s", "a", "c"], ["s", "d"], ["s", "d"]]
    values = milestone_values(states, [True, True, False, False])
    # all three milestones are as pure (rate 1); seen twice a keeps 2/3 of 1/2, seen once b and c keep 1/2 of it
    assert close([values["a"], values["b"], values["c"], values["d"]], [1 / 3, 1 / 4, 1 / 4, -1 / 3])
    assert values["b"] < values["a"]
    raw = milestone_values(states, [True, True, False, False], prior=0.0)  # without calibration: all equal
    assert close([raw["a"], raw["b"], raw["d"]], [0.5, 0.5, -0.5])


# c -> a -> g wins twice; a is also reached straight from s by a failure, and s -> y fails: p = 1/2
PCC_STATES = [["s", "c", "a", "g"], ["s", "c", "a", "g"], ["s", "a", "x"], ["s", "y"]]
PCC_SUCCESSES = [True, True, False, False]


def test_progress_contrastive_calibration_pays_only_progress_that_beats_same_state_alternatives():
    evidence = group_evidence(PCC_STATES, PCC_SUCCESSES)
    values = candidate_values(evidence)
    # c: 2 of 2 won -> 2/3 * 1/2; a: 2 of 3 -> 3/4 * 1/6; g: 2 of 2 -> 2/3 * 1/2; x, y: seen once, no traps
    assert close([values["c"], values["a"], values["g"]], [1 / 3, 1 / 8, 1 / 3]) and set(values) == {"c", "a", "g"}
    # uncalibrated: the first step reaching a candidate earns its value
    assert close(milestone_step_rewards(PCC_STATES[0], values), [1 / 3, 1 / 8, 1 / 3])
    assert close(milestone_step_rewards(PCC_STATES[2], values), [1 / 8, 0.0])
    # winners: s -> c beats s's alternatives (s -> a, s -> y: 0 of 2 won); c -> a is no local progress (1/8 < 1/3);
    # a -> g beats a -> x (1 against 0)
    assert close(milestone_step_rewards(PCC_STATES[0], values, evidence), [1 / 3, 0.0, 1 / 3])
    # the failure's s -> a is local progress (1/8 > 0) but trails s's alternatives (0 won against 2 of 3)
    assert close(milestone_step_rewards(PCC_STATES[2], values, evidence), [0.0, 0.0])
    assert milestone_step_rewards(PCC_STATES[3], values, evidence) == [0.0]


def test_traps_need_progress_toward_failure_and_worse_branches():
    states = [["s", "a", "b"], ["s", "a", "c"], ["s", "d"], ["s", "d"]]
    evidence = group_evidence(states, [True, True, False, False])
    values = candidate_values(evidence)
    # s -> d: value falls (-1/3 < 0) and s -> d (0 of 2) trails s -> a (2 of 2): the trap's value is paid
    assert close(milestone_step_rewards(states[2], values, evidence), [-1 / 3])
    # s -> a pays 1/3; a -> b (1/4) is below a (1/3): no local progress
    assert close(milestone_step_rewards(states[0], values, evidence), [1 / 3, 0.0])


def test_milegpo_adds_the_discounted_calibrated_milestone_return_to_grpo():
    # calibrated step rewards (p = 1/3; m 1/9, w 1/3, t -2/9): E0 s->m 1/9 (beats s->t), m->w 1/3 (beats m->t);
    # E1 s->m 1/9, m->t -2/9 (trails m->w); E2 s->t -2/9 (trails s->m), t->t2 0, t2->t 0 (revisit)
    # gamma .5, turns at steps 0, 1(, 2): E0 [1/9 + 1/6, 1/3] = [5/18, 1/3]; E1 [1/9 - 1/9, -2/9] = [0, -2/9];
    # E2 [-2/9, 0, 0]; GRPO (mean) of scores [1, 0, 0]: [2/3, -1/3, -1/3]
    steps = [[0, 1], [0, 1], [0, 1, 2]]
    out = milegpo_advantages([1.0, 0.0, 0.0], [True, False, False], STATES, steps, coef=1.0, gamma=0.5,
                             normalize="mean")
    assert close(out, [[17 / 18, 1.0], [-1 / 3, -5 / 9], [-5 / 9, -1 / 3, -1 / 3]])
    # coef 0 is GRPO
    out = milegpo_advantages([1.0, 0.0, 0.0], [True, False, False], STATES, steps, coef=0.0, gamma=0.5,
                             normalize="mean")
    assert close(out, [[2 / 3] * 2, [-1 / 3] * 2, [-1 / 3] * 3])
    # on the calibration example: the winners' c -> a and the failure's s -> a earn nothing. Winners' rewards
    # [1/3, 0, 1/3] -> returns (gamma .5) [1/3 + 1/12, 1/6, 1/3]; GRPO (mean) [.5, .5, -.5, -.5]
    out = milegpo_advantages([1.0, 1.0, 0.0, 0.0], PCC_SUCCESSES, PCC_STATES, [[0, 1, 2], [0, 1, 2], [0, 1], [0]],
                             coef=1.0, gamma=0.5, normalize="mean")
    assert close(out, [[11 / 12, 2 / 3, 5 / 6]] * 2 + [[-0.5, -0.5], [-0.5]])
