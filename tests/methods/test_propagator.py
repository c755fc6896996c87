"""NLPG's propagator is an argument with a default (as Trace's ``Optimizer(propagator=...)``)."""

from __future__ import annotations

from nlgrad.credit.backward import NodeFeedbackRecord
from nlgrad.credit.propagator import CriticBackward
from nlgrad.credit.schemas import Diagnosis
from nlgrad.methods.nlpg import NLPG
from nlgrad.runtime.executor import TaskResult


class StubPropagator:
    """Feedback for every trace without an LM: records which traces it was asked about."""

    def __init__(self, lm):
        self.lm, self.skipped, self.seen = lm, [{"what": "x", "reason": "stub"}], []

    def propagate(self, trace, *, score, success, feedback):
        self.seen.append(trace)
        return (Diagnosis(what_went_wrong=f"{trace} failed: {feedback}"),
                [NodeFeedbackRecord(trace_id=trace, node_id="n1", route="r", feedback=feedback, suggestion="s",
                                    blame=1.0, success=success, score=score, source="critic")])


class StubLM:
    def parallelism(self, role):
        return 2


def result(task_id, score, success=False, error=None):
    return TaskResult(task_id=task_id, split="train", seed=0, score=score, success=success,
                      feedback=f"feedback {task_id}", error=error)


def test_a_given_propagator_explains_the_selected_traces():
    built = []

    def factory(lm):
        built.append(StubPropagator(lm))
        return built[-1]

    lm = StubLM()
    results = [result("a", 0.0), result("b", 1.0, success=True), result("c", 0.5), result("d", 0.0, error="boom"),
               result("e", 0.0)]
    traces = {"a": "trace-a", "b": "trace-b", "c": "trace-c", "d": "trace-d"}  # e has no trace
    diagnoses, records, skipped = NLPG(propagator=factory).critique(lm, results, traces, max_diagnose=4, contrast=1)
    assert len(built) == 1 and built[0].lm is lm  # one propagator per critique, built with the run's LM
    assert sorted(built[0].seen) == ["trace-a", "trace-b", "trace-c"]  # no error, no missing trace
    assert list(diagnoses) == ["a", "c", "b"]  # failures by score, then the contrast success
    assert diagnoses["a"]["what_went_wrong"] == "trace-a failed: feedback a"
    assert [r.trace_id for r in records] == ["trace-a", "trace-c", "trace-b"]
    assert skipped == [{"what": "x", "reason": "stub"}]


def test_the_default_propagator_is_the_critic_and_the_backward_pass_with_the_methods_options(make_lm):
    method = NLPG(loop_threshold=6, localized_steps=2)
    propagator = method.propagator(make_lm())
    assert isinstance(propagator, CriticBackward)
    assert propagator.backward.critic is propagator.critic and propagator.skipped is propagator.critic.skipped
    assert propagator.backward.loop_threshold == 6 and propagator.backward.max_localized_steps == 2
