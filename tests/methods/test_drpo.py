"""DRPO: the group advantage and the edit cost on hand-computed numbers."""

import pytest

from nlgrad.methods.drpo import (DRPOParams, advantage_terms, drpo_advantages, edit_cost, edit_weight, mad,
                                 normalized_token_levenshtein)
from nlgrad.text.embeddings import LexicalEmbedder, text_cosine


def test_median_absolute_deviation():
    # median of [0.2, 0.5, 0.5, 0.9] = 0.5; |deviations| = [0.3, 0, 0, 0.4] -> median of [0, 0, 0.3, 0.4] = 0.15
    assert mad([0.2, 0.5, 0.5, 0.9]) == pytest.approx(0.15)
    assert mad([]) == 0.0 and mad([0.7]) == 0.0


def test_advantage_on_hand_computed_numbers():
    rewards, control, costs = [0.2, 0.5, 0.5, 0.9], 0.4, [0.0, 0.5, 1.0, 0.2]
    # defaults: alpha = 0.5, delta = 0.1, lambda_edit = 0.1
    # group scale = 1.4826 * MAD + delta = 1.4826 * 0.15 + 0.1 = 0.22239 + 0.1 = 0.32239
    # control scale = |R_0| + delta = 0.4 + 0.1 = 0.5
    # A_1 = 0.5 * (0.2 - 0.5) / 0.32239 + 0.5 * (0.2 - 0.4) / 0.5 - 0.1 * 0.0 = -0.465275 - 0.2 - 0    = -0.665275
    # A_2 = 0.5 * 0 / 0.32239            + 0.5 * (0.5 - 0.4) / 0.5 - 0.1 * 0.5 =  0        + 0.1 - 0.05 =  0.05
    # A_3 = 0                             + 0.1                     - 0.1 * 1.0 =                           0.0
    # A_4 = 0.5 * (0.9 - 0.5) / 0.32239 + 0.5 * (0.9 - 0.4) / 0.5 - 0.1 * 0.2 =  0.620367 + 0.5 - 0.02  =  1.100367
    expected = [-0.665275, 0.05, 0.0, 1.100367]
    assert drpo_advantages(rewards, control, costs) == pytest.approx(expected, abs=1e-6)
    terms = advantage_terms(rewards, control, costs, DRPOParams())
    assert terms[3]["group"] == pytest.approx(0.620367, abs=1e-6) and terms[3]["control"] == pytest.approx(0.5)
    assert terms[3]["cost"] == pytest.approx(0.02)


def test_advantage_when_all_candidates_tie_and_control_is_zero():
    # MAD = 0 -> group scale = delta; all equal -> group term 0; control term = 0.5 * (0.5 - 0) / (0 + 0.1) = 2.5
    assert drpo_advantages([0.5, 0.5, 0.5], 0.0, [0, 0, 0]) == pytest.approx([2.5, 2.5, 2.5])
    # alpha = 1 keeps only the group term: median of [0, 0.5, 1] = 0.5, MAD = median(0.5, 0, 0.5) = 0.5,
    # scale = 1.4826 * 0.5 + 0.1 = 0.8413; A = (R - 0.5) / 0.8413 = [-0.594318, 0, 0.594318]
    params = DRPOParams(alpha=1.0)
    assert drpo_advantages([0.0, 0.5, 1.0], 0.3, [0, 0, 0], params) == pytest.approx([-0.594318, 0, 0.594318],
                                                                                     abs=1e-6)
    with pytest.raises(ValueError):
        drpo_advantages([0.1], 0.0, [0.1, 0.2])


def test_edit_cost_on_hand_computed_numbers():
    # "Open the door first." = 5 tokens; "Open the red door first." = 6 tokens; one insertion -> lev = 1 / 6
    old, new = "Open the door first.", "Open the red door first."
    assert normalized_token_levenshtein(old, new) == pytest.approx(1 / 6)
    # replace weight 1.0, eta 0.5, cosine 0.9: C = 1.0 * (0.5 * 1/6 + 0.5 * (1 - 0.9)) = 0.083333 + 0.05 = 0.133333
    p = DRPOParams()
    cost = edit_cost(old, new, weight=edit_weight("replace", protected=False, params=p), eta=p.eta,
                     cosine=lambda a, b: 0.9)
    assert cost == pytest.approx(0.133333, abs=1e-6)
    # deleting a human-written section: w = 1.5 (delete) * 2.0 (protected) = 3.0; lev = 1, 1 - cos("", x) = 1
    emb = LexicalEmbedder()
    cosine = lambda a, b: text_cosine(emb, a, b)  # noqa: E731
    assert edit_cost("Keep the key.", "", weight=edit_weight("delete", protected=True, params=p), eta=p.eta,
                     cosine=cosine) == pytest.approx(3.0)
    # adding a new section: old = "", lev = 1, cos = 0 -> C = w = 1.0; an unchanged text costs 0
    assert edit_cost("", "Look first.", weight=1.0, eta=0.5, cosine=cosine) == pytest.approx(1.0)
    assert edit_cost("Same text.", "Same text.", weight=1.0, eta=0.5, cosine=cosine) == pytest.approx(0.0)
    assert normalized_token_levenshtein("", "") == 0.0


def test_params_are_validated_and_configurable():
    with pytest.raises(ValueError):
        DRPOParams(alpha=1.5)
    with pytest.raises(ValueError):
        DRPOParams(delta=0)
    p = DRPOParams(action_weights={"add": 2.0})
    assert edit_weight("add", protected=False, params=p) == 2.0 and edit_weight("replace", protected=False,
                                                                                  params=p) == 1.0
