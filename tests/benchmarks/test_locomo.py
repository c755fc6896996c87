"""LoCoMo: conversation-level splits, loader, F1 / refusal metric by category, and the RAG program (scripted LM)."""

import json

import pytest

from nlgrad.benchmarks.locomo import (CATEGORY_NAMES, ENV_VAR, SPLIT_CONVERSATIONS, LocomoBenchmark,
                                      scores_by_category, short_date)
from nlgrad.benchmarks.qa_metrics import is_refusal
from nlgrad.errors import BenchmarkError
from nlgrad.programs.locomo_rag import ANSWER, LocomoRAGProgram
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.registry import load_benchmark, load_program


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("locomo")


def test_loader_and_conversation_turns(bench):
    task = bench.tasks("dev", 1)[0]
    assert task.id == "locomo/dev/conv-44-q154" and task.inputs["sample_id"] == "conv-44"
    assert set(task.inputs) == {"question", "sample_id", "speakers"}  # the conversation is not copied per task
    assert task.meta["category"] == 5 and task.meta["category_name"] == "adversarial"
    turns = bench.turns("conv-26")
    assert len(turns) == 419 and turns[0]["dia_id"] == "D1:1" and turns[0]["date"] == "8 May 2023"
    assert any(t["caption"] for t in turns)


def test_splits_are_by_conversation_fixed_and_disjoint(bench):
    tasks = {s: bench.tasks(s) for s in ("train", "dev", "test")}
    assert {s: len(v) for s, v in tasks.items()} == {"train": 757, "dev": 590, "test": 639}
    convs = {s: {t.inputs["sample_id"] for t in v} for s, v in tasks.items()}
    assert convs == {s: set(c) for s, c in SPLIT_CONVERSATIONS.items()}
    ids = {s: {t.id.split("/")[-1] for t in v} for s, v in tasks.items()}
    assert not (ids["train"] & ids["dev"]) and not (ids["dev"] & ids["test"]) and not (ids["train"] & ids["test"])
    assert sum(map(len, ids.values())) == 1986
    again = LocomoBenchmark().tasks("dev", 20)
    assert [t.id for t in again] == [t.id for t in tasks["dev"][:20]]
    assert len({t.meta["category"] for t in again}) >= 4  # the fixed shuffle mixes categories


def test_category_variant_keeps_one_category(bench):
    temporal = load_benchmark("locomo/temporal")
    tasks = temporal.tasks("dev")
    assert {t.meta["category"] for t in tasks} == {2} and len(tasks) == 26 + 24 + 34
    with pytest.raises(BenchmarkError, match="single_hop"):
        load_benchmark("locomo/funny")
    with pytest.raises(BenchmarkError, match="validation"):
        bench.tasks("validation")


def test_missing_data_dir_names_the_path_and_env_var(tmp_path, monkeypatch):
    with pytest.raises(BenchmarkError) as err:
        LocomoBenchmark(data_dir=tmp_path / "gone").tasks("dev")
    assert str(tmp_path / "gone") in str(err.value) and ENV_VAR in str(err.value)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "gone"))
    with pytest.raises(BenchmarkError, match=ENV_VAR):
        LocomoBenchmark().tasks("dev")


def test_data_dir_argument_is_used(tmp_path):
    conv = {"sample_id": "conv-43", "speaker_a": "A", "speaker_b": "B",
            "sessions": [{"session": 1, "date_time": "1:00 pm on 2 May, 2023",
                          "turns": [{"speaker": "A", "dia_id": "D1:1", "text": "I love tea."}]}]}
    (tmp_path / "conversations.jsonl").write_text(json.dumps(conv) + "\n")
    (tmp_path / "qa.jsonl").write_text(json.dumps({"sample_id": "conv-43", "qid": "conv-43-q0", "question": "What?",
                                                   "answer": "tea", "evidence": ["D1:1"], "category": 4}) + "\n")
    bench = LocomoBenchmark(data_dir=tmp_path)
    assert [t.id for t in bench.tasks("dev")] == ["locomo/dev/conv-43-q0"] and bench.tasks("train") == []


def _task(category, answer, adversarial=None, question="What did Caroline research?"):
    return Task(id="t", split="dev", inputs={"question": question, "sample_id": "conv-26", "speakers": ["C", "M"]},
                gold={"answer": answer, "adversarial_answer": adversarial, "evidence": ["D2:8"]},
                meta={"category": category, "category_name": CATEGORY_NAMES[category]})


def test_metric_token_f1_for_answerable_questions(bench):
    task = _task(1, "Adoption agencies")
    exact = bench.metric(task, {"answer": "adoption agencies.", "dia_ids": ["D2:8"]})
    assert exact.score == 1.0 and exact.success and exact.details["category"] == 1
    assert exact.details["category_name"] == "multi_hop" and exact.details["evidence_retrieved"] == 1
    partial = bench.metric(task, "agencies for adoption")  # P = 2/3 ("for" is not dropped), R = 1
    assert partial.score == pytest.approx(2 * (2 / 3) / (2 / 3 + 1)) and partial.success
    refused = bench.metric(task, {"answer": "Not mentioned in the conversation", "dia_ids": []})
    assert refused.score == 0.0 and "refused" in refused.feedback and "missed ['D2:8']" in refused.feedback
    for junk in (None, "", 3, ["x"], {"dia_ids": "D1:1"}):
        res = bench.metric(task, junk)
        assert res.score == 0.0 and not res.success and "'Adoption agencies'" in res.feedback


def test_metric_refusal_for_adversarial_questions(bench):
    task = _task(5, None, adversarial="self-care is important", question="What did Caroline realize after her race?")
    for reply in ("Not mentioned in the conversation.", "No information available", "The conversation doesn't say",
                  "Unknown", "It cannot be determined from the messages"):
        res = bench.metric(task, {"answer": reply, "dia_ids": []})
        assert res.score == 1.0 and res.success and res.details["category_name"] == "adversarial", reply
    fooled = bench.metric(task, "Self-care is important")
    assert fooled.score == 0.0 and "distractor" in fooled.feedback and "not mentioned" in fooled.feedback
    for junk in (None, "", 0, {"answer": None}):
        assert bench.metric(task, junk).score == 0.0
    with_gold = _task(5, "No", adversarial="Yes", question="Is Oscar Melanie's pet?")
    assert bench.metric(with_gold, "No").success and bench.metric(with_gold, "Not mentioned").success
    assert not bench.metric(with_gold, "Yes").success


@pytest.mark.parametrize("text, refused", [
    ("Not mentioned in the conversation", True), ("no info", True), ("I don't know", True), ("N/A", True),
    ("unanswerable", True), ("Melanie didn't mention it", True), ("7 May 2023", False), ("No", False),
    ("", False), (None, False), ("Mentioned twice: pottery", False),
])
def test_refusal_detection(text, refused):
    assert is_refusal(text) is refused


def test_helpers():
    assert short_date("1:56 pm on 8 May, 2023") == "8 May 2023" and short_date("2023") == "2023"
    rows = [{"score": 1.0, "details": {"category_name": "temporal"}},
            {"score": 0.0, "details": {"category_name": "temporal"}}, {"score": 0.5, "details": {}}]
    assert scores_by_category(rows) == {"temporal": {"n": 2, "mean": 0.5}, "unknown": {"n": 1, "mean": 0.5}}


def test_program_retrieves_turns_then_answers(bench, make_lm, script):
    script(['Answer: "Adoption agencies".'])
    program = load_program("locomo_rag", benchmark=bench)
    assert program.routes == [ANSWER]
    task = bench.tasks("train")[0]
    result = Executor(benchmark=bench, program=program, lm=make_lm(), progress=False, keep_traces=True).run([task])
    (r,) = result.results
    assert r.error is None and r.output["answer"] == "Adoption agencies"
    trace = result.traces[r.task_id]
    (tool,) = trace.nodes(kind="tool")
    assert tool["route"] == "retrieve" and tool["args"] == {"sample_id": task.inputs["sample_id"],
                                                            "query": task.inputs["question"], "k": 5}
    turns = tool["result"]
    assert len(turns) == 5 and r.output["dia_ids"] == [t["dia_id"] for t in turns]
    order = [tuple(int(x) for x in t["dia_id"][1:].split(":")) for t in turns]
    assert order == sorted(order)  # shown in conversation order
    (answer,) = trace.nodes(kind="module")
    assert answer["route"] == ANSWER and tool["id"] in trace.parents(answer["id"])
    assert turns[0]["date"] in answer["messages"][-1]["content"]


def test_search_is_deterministic_and_finds_the_evidence(bench):
    program = LocomoRAGProgram(benchmark=bench)
    hits = program.search("conv-26", "When did Caroline go to the LGBTQ support group?", 5)
    assert "D1:3" in [h["dia_id"] for h in hits]
    assert hits == program.search("conv-26", "When did Caroline go to the LGBTQ support group?", 5)


def test_human_policy_loads_and_renders_for_program_routes(bench):
    from nlgrad import policy
    memory = policy.PolicyMemory.load(LocomoBenchmark.human_policy)
    assert memory.routes() == [ANSWER]
    text = memory.render(ANSWER)
    program = LocomoRAGProgram(benchmark=bench)
    system = program.answer.render(text, {"question": "q", "turns": [], "speakers": ["A", "B"]})[0]["content"]
    assert text in system and "Not mentioned" in text


def test_failure_tags_name_the_answers_form_and_missed_evidence(bench):
    task = _task(1, "Adoption agencies")
    assert bench.metric(task, {"answer": "adoption agencies", "dia_ids": ["D2:8"]}).details["tags"] == []
    long = bench.metric(task, {"answer": "She said she was looking into adoption agencies near her home town",
                               "dia_ids": ["D2:8"]})
    assert long.details["tags"] == ["answer:sentence_not_span"]
    refused = bench.metric(task, {"answer": "Not mentioned in the conversation", "dia_ids": []})
    assert refused.details["tags"] == ["answer:refused_answerable", "retrieval:missed_evidence"]
    assert bench.metric(task, "").details["tags"] == ["answer:empty", "retrieval:missed_evidence"]
    adversarial = _task(5, None, adversarial="self-care is important", question="What did Caroline realize?")
    assert bench.metric(adversarial, "Not mentioned").details["tags"] == []
    assert bench.metric(adversarial, "Self-care is important").details["tags"] == [
        "answer:answered_unanswerable", "answer:repeated_distractor"]
    assert bench.metric(adversarial, "Running shoes").details["tags"] == ["answer:answered_unanswerable"]
