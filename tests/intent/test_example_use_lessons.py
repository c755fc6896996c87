"""NLPG's example-use lesson: failed calls that were shown an example of the right reply and replied otherwise
(ignored examples) recur, the writer turns them into one lesson for the route, the gate keeps it, and a route that
holds one gets no second."""

import json

from fake_lm import install_fake_lm

from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize
from nlgrad.policy import EntryKind, PolicyStore

from intent_world import LABELS, copy_nearest_demo

LESSON = "Reply with the label of the worked example that asks the same thing as the message."
WRITER_ASK = "Failures: a worked example showed the right reply"


def stubborn_agent_and_writer(messages: list[dict]) -> str:
    """The writer returns LESSON; the agent copies its nearest example only when LESSON is in its instructions, else
    replies the first label (so without the lesson every other label's call ignores the example it was shown)."""
    if WRITER_ASK in messages[-1]["content"]:
        return json.dumps({"text": LESSON})
    if LESSON in messages[0]["content"]:
        return copy_nearest_demo(messages)
    return LABELS[0] if "responses" not in json.dumps(messages[0]) else "{}"


def run(settings, out, method, iterations=1, **options):
    cfg = OptimizeConfig(method=method, benchmark="banking77", iterations=iterations, batch=16, val=16, test_n=16,
                         gate_require_ci=False, method_options=options,
                         init_policy=str(options.pop("init")) if "init" in options else None)
    return run_optimize(cfg, settings, out, progress=False)


def test_recurring_ignored_examples_become_one_gated_lesson_on_using_them(settings, intent_data, monkeypatch,
                                                                          tmp_path):
    calls = install_fake_lm(monkeypatch, stubborn_agent_and_writer)
    run(settings, tmp_path / "knn", "knn_fewshot", embedder="lexical")
    outcome = run(settings, tmp_path / "pol", "nlpg", iterations=2, init=tmp_path / "knn", critic=False,
                  similarity="lexical", example_lessons=True)
    assert outcome.state.history[0].accepted
    record = json.loads((tmp_path / "pol/run/iter-0001/example_use.json").read_text())
    assert record["routes"] == ["intent.classify"] and len(record["ignored"]) >= 2
    assert all(c["got"] == LABELS[0] and c["expected"] != LABELS[0] for c in record["ignored"])
    assert all(c["example"].endswith(f"Output: {c['expected']}") for c in record["ignored"])
    (rule,) = [e for e in PolicyStore(tmp_path / "pol").load().active_entries("intent.classify")
               if e.kind != EntryKind.example]
    assert rule.text == LESSON and "how to use the shown examples" in rule.provenance.reason
    assert len(rule.provenance.trace_ids) == len({c["task_id"] for c in record["ignored"]})
    assert outcome.test["initial"]["score"]["mean"] == 0.25 and outcome.test["final"]["score"]["mean"] == 1.0
    # the route now holds its lesson: the second iteration writes none
    assert json.loads((tmp_path / "pol/run/iter-0002/example_use.json").read_text())["routes"] == []
    # one writer call per 4 ignored examples, at most 3 (the samples), all in iteration 1; their lessons merged
    assert sum(WRITER_ASK in m[-1]["content"] for m in calls) == min(3, -(-len(record["ignored"]) // 4)) > 1
    assert len(record["candidates"]) > 1


def test_without_the_option_no_example_use_lesson_is_written(settings, intent_data, monkeypatch, tmp_path):
    calls = install_fake_lm(monkeypatch, stubborn_agent_and_writer)
    run(settings, tmp_path / "knn", "knn_fewshot", embedder="lexical")
    run(settings, tmp_path / "pol", "nlpg", init=tmp_path / "knn", critic=False, similarity="lexical",
        examples=48, examples_cover=False)
    assert not (tmp_path / "pol/run/iter-0001/example_use.json").exists()
    assert not any(WRITER_ASK in m[-1]["content"] for m in calls)
