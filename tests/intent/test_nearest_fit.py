"""The nearest-example fit (nlgrad.methods.nlpg.nearest_fit) on hand-computed 2-D cases."""

import numpy as np

from nlgrad.methods.nlpg.nearest_fit import fit_share, nearest_fit


def unit(*rows):
    m = np.array(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


PROBES = unit((1, 0.1), (0.9, 0.3), (0.1, 1), (0.3, 0.9))
PROBE_LABELS = np.array(["a", "a", "b", "b"])
# an "a" message on the a-side, a "b" message on the b-side, and a generic "a" message half-way
CANDIDATES = unit((1, 0), (0, 1), (1, 1))
CANDIDATE_LABELS = np.array(["a", "b", "a"])


def test_each_pick_gives_the_most_probes_a_nearest_example_of_their_label_and_the_fit_stops_when_none_gains():
    picks = nearest_fit(PROBES, PROBE_LABELS, CANDIDATES, CANDIDATE_LABELS, budget=3)
    # step 1: every candidate is nearest for all four probes, right for two (tie: the first);
    # step 2: the b-side message takes both b probes; the generic one would take them too but with the wrong label.
    # step 3: the generic message is nearer no probe than what is held: nothing gains, the fit stops under budget
    assert [(p.index, p.gain) for p in picks] == [(0, 2), (1, 2)]
    assert fit_share(PROBES, PROBE_LABELS, CANDIDATES[[0, 1]], CANDIDATE_LABELS[[0, 1]]) == 1.0


def test_a_candidate_that_would_take_a_probe_from_its_right_example_is_a_loss():
    held, held_labels = unit((1, 0)), np.array(["a"])
    wrong_near_a = unit((0.9, 0.3))  # exactly probe 1's direction, but labelled b
    probes, labels = PROBES[:2], PROBE_LABELS[:2]
    assert nearest_fit(probes, labels, wrong_near_a, np.array(["b"]), 1, held=held, held_labels=held_labels) == []
    right_near_a = nearest_fit(probes, labels, wrong_near_a, np.array(["a"]), 1, held=held, held_labels=held_labels)
    assert right_near_a == []  # probe 1 already had a right nearest example: no gain either
    assert [p.gain for p in nearest_fit(probes, labels, wrong_near_a, np.array(["a"]), 1)] == [2]


def test_a_probe_is_never_its_own_nearest_example():
    probe, label = unit((1, 0.2)), np.array(["a"])
    with_itself = nearest_fit(probe, label, probe, label, 1)
    assert [(p.index, p.gain) for p in with_itself] == [(0, 1)]
    assert nearest_fit(probe, label, probe, label, 1, probe_candidate=np.array([0])) == []
    assert nearest_fit(probe, label, probe, label, 0) == []
