"""Support counting, near-duplicate merging, contradictions, instance-detail filter, and the paired gate."""

import pytest

from nlgrad.methods.lesson_checks import instance_tokens
from nlgrad.methods.nlpg.aggregate import aggregate
from nlgrad.methods.nlpg.proposals import Candidate
from nlgrad.methods.strategies.acceptance import PairedImprovementGate
from nlgrad.policy import AddOp, EditOp


def cand(text, traces, route="r", replaces=None):
    return Candidate(route=route, text=text, when=None, trace_ids=list(traces), replaces=replaces)


def test_support_counts_distinct_traces_across_near_duplicates():
    ops, report = aggregate([
        cand("Open the door before moving through it.", ["t1"]),
        cand("Open the door before you move through it.", ["t2", "t1"]),
        cand("Read the cookbook first.", ["t3"]),
    ], min_support=2)
    assert len(ops) == 1 and isinstance(ops[0], AddOp)
    assert ops[0].trace_ids == ["t1", "t2"] and ops[0].text == "Open the door before moving through it."
    assert report.dropped[0]["text"] == "Read the cookbook first." and "support 1" in report.dropped[0]["reason"]


def test_contradiction_resolved_toward_majority():
    ops, report = aggregate([
        cand("Close the door after you pass it.", ["t1", "t2", "t3"]),
        cand("Do not close the door after you pass it.", ["t4", "t5"]),
    ], min_support=2)
    assert [op.text for op in ops] == ["Close the door after you pass it."]
    assert "contradicts" in report.dropped[0]["reason"]


def test_contradiction_with_equal_support_drops_both():
    ops, report = aggregate([cand("Take the key first.", ["a", "b"]),
                             cand("Never take the key first.", ["c", "d"])], min_support=2)
    assert ops == [] and len(report.dropped) == 2


def test_instance_details_are_dropped():
    specific = instance_tokens({"t1": "Where was Barack Obama born in 1961?", "t2": "Who wrote Hamlet?"},
                               general_text="Answer the question.")
    assert "barack obama" in specific and "1961" in specific
    ops, report = aggregate([cand("When asked about Barack Obama, answer Honolulu.", ["t1", "t2"]),
                             cand("Answer with a short span from the passages.", ["t1", "t2"])],
                            min_support=2, instance_specific=specific)
    assert [op.text for op in ops] == ["Answer with a short span from the passages."]
    assert "instance details" in report.dropped[0]["reason"]


def test_corrections_that_restate_the_routes_own_instructions_are_dropped():
    # seen on twx/twc: the 1.5B optimizer "learned" twx_react's system prompt back, with support 2
    instructions = ("You are an agent playing a text adventure game. Every turn you see what happened and a numbered "
                    "list of the actions that are possible right now. Choose the one action that best moves you "
                    "towards finishing the task. Reply with the number of the action only.")
    restated = cand("When you see what happened and a numbered list of the actions that are possible right now, "
                    "choose the one action that best moves you towards finishing the task.", ["t1", "t2"], route="a")
    lesson = cand("Put each object where it usually belongs (clothes in the wardrobe) before trying other places.",
                  ["t1", "t2"], route="a")
    ops, report = aggregate([restated, lesson], min_support=2, instructions={"a": instructions})
    assert [op.text for op in ops] == [lesson.text]
    assert report.dropped[0]["reason"].startswith("restates the route's own instructions")
    other_route, _ = aggregate([restated], min_support=2, instructions={"b": instructions})
    assert len(other_route) == 1  # only a route's own instructions count


LOWERCASE = ("Always ensure that your input is in lowercase and does not contain any capital letters. This will help "
             "avoid the violation of the change_case requirement.")


def test_a_lesson_the_gate_rejected_is_not_gated_again_under_another_condition():
    # seen on ifeval x 1.5B: after the gate rejected this lesson, the writer copied it into the no_comma,
    # repeat_prompt and forbidden_words groups, and the merged copy was gated again with support 6
    copies = [cand(LOWERCASE, ["t1", "t2"]), cand(LOWERCASE.replace("Always e", "E"), ["t3", "t4"])]
    lesson = cand("Never write a comma anywhere in the reply when the input forbids commas.", ["t5", "t6"])
    ops, report = aggregate([*copies, lesson], min_support=2, rejected={"r": [LOWERCASE]})
    assert [op.text for op in ops] == [lesson.text]
    assert [d["reason"].startswith("repeats a lesson the gate rejected") for d in report.dropped] == [True, True]
    assert len(aggregate(copies, min_support=2, rejected={"other": [LOWERCASE]})[0]) == 1  # per route


def test_a_line_that_narrates_the_runs_is_dropped():
    narrating = cand("Meet every keyword frequency. For example, in the first run, the word appears 0 times.",
                     ["t1", "t2"])
    ops, report = aggregate([narrating, cand("Count each required keyword before you answer.", ["t1", "t2"])],
                            min_support=2)
    assert [op.text for op in ops] == ["Count each required keyword before you answer."]
    assert report.dropped[0]["reason"] == "narrates the runs instead of stating a lesson: 'in the first run'"


def test_replaces_becomes_an_edit_and_ops_are_ordered_by_support():
    ops, _ = aggregate([cand("Short rule here, applied.", ["a", "b"]),
                        cand("Better wording of rule one.", ["a", "b", "c"], replaces="r#1")], min_support=2)
    assert isinstance(ops[0], EditOp) and ops[0].id == "r#1" and isinstance(ops[1], AddOp)


@pytest.mark.parametrize("cand_scores, cur_scores, accept", [
    ([1, 1, 1, 0], [0, 1, 1, 0], False),     # +0.25, won 1 lost 0: fewer than 2 wins
    ([1, 1, 1, 0], [0, 0, 1, 0], True),      # +0.5, won 2 lost 0
    ([1, 1, 0, 0], [0, 0, 0, 1], True),      # +0.25, won 2 lost 1
    ([1, 1, 0, 0], [1, 1, 0, 0], False),     # no change
    ([1, 0, 1, 0], [0, 1, 0, 1], False),     # +0.0, 2 wins 2 losses
    ([1, 1, 1, 0, 0], [0, 0, 1, 1, 1], False),  # +0.0 margin
    ([0.5, 0.51], [0.5, 0.5], False),        # +0.005 <= margin 0.02
])
def test_gate_paired_decision(cand_scores, cur_scores, accept):
    decision = PairedImprovementGate(margin=0.02).decide(cand_scores, cur_scores)
    assert decision.accept is accept
    assert decision.mean_diff == pytest.approx(sum(cand_scores) / len(cand_scores) - sum(cur_scores) / len(cur_scores))
    assert decision.ci95[0] <= decision.mean_diff <= decision.ci95[1]


def test_gate_min_wins_is_configurable_and_capped_by_the_number_of_tasks():
    one_lucky_task = ([1, 1, 1, 0, 0, 0], [0, 1, 1, 0, 0, 0])  # the ifeval JERP case: +0.167, 1 win, 0 losses
    assert not PairedImprovementGate().decide(*one_lucky_task).accept
    assert "fewer than the 2 required" in PairedImprovementGate().decide(*one_lucky_task).reason
    assert PairedImprovementGate(min_wins=1).decide(*one_lucky_task).accept
    assert PairedImprovementGate(min_wins=2).decide([1.0], [0.0]).accept  # one validation task: all of it
    assert not PairedImprovementGate(min_wins=3).decide([1, 1, 0], [0, 0, 0]).accept
    with pytest.raises(ValueError, match="min_wins"):
        PairedImprovementGate(min_wins=0)


def test_gate_can_require_ci_above_zero():
    gate = PairedImprovementGate(margin=0.0, require_ci=True)
    assert not gate.decide([1, 0, 0, 0], [0, 0, 0, 0]).accept
    assert gate.decide([1] * 10, [0] * 10).accept


def test_gate_requires_the_ci_by_default_only_where_the_validation_set_can_tell():
    from nlgrad.methods.strategies.acceptance import AUTO_CI_MIN_TASKS

    # 4 wins, 1 loss: above the margin and more won than lost, but the bootstrap interval still reaches 0
    few_cand, few_cur = [1, 1, 1, 1, 0] + [0] * 5, [0, 0, 0, 0, 1] + [0] * 5
    many_cand = few_cand + [0] * (AUTO_CI_MIN_TASKS - len(few_cand))
    many_cur = few_cur + [0] * (AUTO_CI_MIN_TASKS - len(few_cur))
    auto = PairedImprovementGate(margin=0.0)
    assert auto.decide(few_cand, few_cur).accept  # 10 tasks: the CI is not asked for
    decision = auto.decide(many_cand, many_cur)  # 30 tasks: it is, and it includes 0
    assert not decision.accept and "CI" in decision.reason and decision.ci95[0] <= 0
    assert PairedImprovementGate(margin=0.0, require_ci=False).decide(many_cand, many_cur).accept
    assert auto.decide([1] * 20 + [0] * 10, [0] * 30).accept  # a clear gain passes the default gate


PARAPHRASES = [cand("When the coin is in the room, take coin immediately.", ["t1"]),
               cand("If you see the coin, pick it up right away.", ["t2"]),
               cand("Open closed doors before moving to a new room.", ["t3"])]


def test_lexical_backend_keeps_paraphrases_apart():
    from nlgrad.methods.correction_similarity import correction_similarity

    sim, threshold, backend = correction_similarity("lexical")
    assert backend == "lexical" and threshold == 0.6
    ops, _ = aggregate([cand(c.text, c.trace_ids) for c in PARAPHRASES], min_support=2, similarity=sim,
                       dedupe_threshold=threshold)
    assert ops == []
    assert correction_similarity("lexical", 0.3)[1] == 0.3


def test_embedding_backend_merges_paraphrases_into_one_recurring_correction():
    from nlgrad.methods.correction_similarity import correction_similarity
    from nlgrad.text.embeddings import minilm_available

    if not minilm_available():
        pytest.skip("the 'embed' extra (MiniLM) is not installed")
    sim, threshold, backend = correction_similarity("minilm")
    assert backend == "all-MiniLM-L6-v2" and threshold == 0.65
    ops, report = aggregate([cand(c.text, c.trace_ids) for c in PARAPHRASES], min_support=2, similarity=sim,
                            dedupe_threshold=threshold)
    assert [op.text for op in ops] == [PARAPHRASES[0].text] and ops[0].trace_ids == ["t1", "t2"]
    assert [d["text"] for d in report.dropped] == [PARAPHRASES[2].text]


def test_a_copied_feedback_item_becomes_its_suggestion():
    from nlgrad.methods.nlpg.proposals import ProposedCorrection

    copied = ProposedCorrection(text="When you open the screen door again after it was already open, which caused a "
                                     "failure. Suggested: Only open doors that are closed.")
    assert copied.text == "Only open doors that are closed."
    plain = ProposedCorrection(text="Suggested: nothing")  # too short a suggestion: kept as written
    assert plain.text == "Suggested: nothing"
    assert ProposedCorrection(text="Open the door first, then move.").text == "Open the door first, then move."


def test_embedding_backend_flags_only_real_contradictions():
    """With MiniLM, "X" vs "never X" is a contradiction; two corrections on one topic where only one says "no" are
    not (under a 0.6 contradiction threshold MiniLM dropped such a pair, both with support 2 here, on twx/arithmetic)."""
    from nlgrad.methods.correction_similarity import contradiction_threshold, correction_similarity
    from nlgrad.text.embeddings import minilm_available

    if not minilm_available():
        pytest.skip("the 'embed' extra (MiniLM) is not installed")
    sim, threshold, backend = correction_similarity("minilm")
    limit = contradiction_threshold(backend)
    assert limit == 0.8 and contradiction_threshold("lexical") == 0.6
    topical = [cand("When the program fails to find an item with the correct quantity, it should look around for "
                    "other options.", ["t1", "t2"]),
               cand("Check for items with the correct quantity before putting them in the box; if no matching item "
                    "is found, look around first.", ["t3", "t4"])]
    ops, report = aggregate(topical, min_support=2, similarity=sim, dedupe_threshold=threshold,
                            contradiction_threshold=limit)
    assert len(ops) == 2 and report.dropped == []
    opposed = [cand("Put the math problem in the box.", ["t1", "t2", "t3"]),
               cand("Never put the math problem in the box.", ["t4", "t5"])]
    ops, report = aggregate(opposed, min_support=2, similarity=sim, dedupe_threshold=threshold,
                            contradiction_threshold=limit)
    assert [op.text for op in ops] == ["Put the math problem in the box."]
    assert report.dropped[0]["reason"].startswith("contradicts a better-supported correction")


def record(trace, text, suggestion="", route="r", success=False, score=0.0):
    from nlgrad.credit.backward import NodeFeedbackRecord

    return NodeFeedbackRecord(trace_id=trace, node_id="n1", route=route, feedback=text, suggestion=suggestion,
                              blame=1.0, success=success, score=score, source="critic")


def test_support_is_also_credited_from_failed_traces_whose_feedback_says_the_same():
    from nlgrad.methods.nlpg.aggregate import attribute_support
    from nlgrad.policy import LexicalSimilarity

    general = cand("Open the door before moving through it.", ["t1"])
    specific = cand("Take the brass key from the kitchen table.", ["t1"])
    records = [
        record("t1", "The agent walked into a closed door.", "Open the door before moving through it."),
        record("t2", "Blocked again.", "Open the door before you move through it."),      # same lesson: counts
        record("t3", "It won.", "Open the door before moving through it.", success=True, score=1.0),  # a success
        record("t4", "Blocked.", "Open the door before moving through it.", route="other"),  # another route
        record("t5", "It read nothing.", "Read the cookbook first."),                          # another lesson
    ]
    sim = LexicalSimilarity()
    credited = attribute_support([general, specific], records, sim, 0.6)
    assert credited[0].trace_ids == ["t1", "t2"] and "feedback of t2" in credited[0].notes[0]
    assert credited[1].trace_ids == ["t1"] and credited[1].notes == []
    assert general.trace_ids == ["t1"]  # inputs are not mutated
    ops, report = aggregate(credited, min_support=2, similarity=sim)
    assert [op.text for op in ops] == [general.text] and ops[0].trace_ids == ["t1", "t2"]
    assert [d["text"] for d in report.dropped] == [specific.text]


def test_a_lesson_conditioned_on_the_run_is_dropped():
    on_score = Candidate(route="if.respond", text="Answer every part of the request.", when="score == 0.00",
                         trace_ids=["t1", "t2"])
    on_route = Candidate(route="if.respond", text="Keep the answer short.", when="if.respond", trace_ids=["t1", "t2"])
    fine = Candidate(route="if.respond", text="Write no commas at all.", when="the input forbids commas",
                     trace_ids=["t1", "t2"])
    ops, report = aggregate([on_score, on_route, fine], min_support=2)
    assert [op.text for op in ops] == ["Write no commas at all."]
    assert [d["reason"] for d in report.dropped] == ["its condition is about the run, not the input: 'score =='",
                                                     "its condition is about the run, not the input: 'if.respond'"]


def test_a_lesson_in_another_script_than_the_instructions_is_dropped():
    garbled = Candidate(route="if.respond", text="कौच्य-श्रेन्... सदा", when=None, trace_ids=["t1", "t2"])
    fine = Candidate(route="if.respond", text="Write no commas at all.", when=None, trace_ids=["t1", "t2"])
    ops, report = aggregate([garbled, fine], min_support=2, instructions={"if.respond": "Follow the request."})
    assert [op.text for op in ops] == ["Write no commas at all."]
    assert report.dropped[0]["reason"] == "written in devanagari script, not in the language of the program's " \
                                          "instructions"
