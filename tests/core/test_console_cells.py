"""The optimize report's cells say what a gate decision rests on."""

from nlgrad.console import gate_diff_cell
from nlgrad.methods.strategies.acceptance import GateDecision, PairedImprovementGate


def test_the_iterations_table_shows_no_interval_for_a_decision_without_a_paired_test():
    own = GateDecision.self_selected(0.47, 0.41, "GEPA's own selection").to_dict()
    paired = PairedImprovementGate(margin=0.0, min_wins=1).decide([1.0, 1.0, 0.0], [0.0, 1.0, 0.0]).to_dict()
    assert gate_diff_cell(own) == "+0.060 (no paired test, no CI)"
    low, high = paired["ci95"]
    assert gate_diff_cell(paired) == f"+0.333 [{low:+.3f}, {high:+.3f}]" and low < high
    assert gate_diff_cell({}) == "-"
