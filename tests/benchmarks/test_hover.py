"""HoVer: loader, splits, evidence corpus, the label parser, the metric and the verify program (scripted LM)."""

import json

import pytest

from nlgrad.benchmarks.hover import ENV_VAR, HoverBenchmark
from nlgrad.errors import BenchmarkError
from nlgrad.programs.hover_verify import QUERY, VERIFY, HoverVerifyProgram
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.registry import load_benchmark, load_program
from nlgrad.text import LABELS, parse_label


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("hover")


def test_loader_reads_the_shared_files(bench):
    tasks = bench.tasks("dev", 3)
    first = tasks[0]
    assert first.id == "hover/dev/5e597c6a-b6d2-4720-817e-cab1c6263c40"
    assert list(first.inputs) == ["claim"] and first.inputs["claim"].startswith("Activist John Conyers")
    assert first.gold["label"] == "NOT_SUPPORTED" and first.meta["num_hops"] == 2
    assert {f["title"] for f in first.gold["supporting_facts"]} == {"State of the Black Union", "John Conyers"}
    assert all(t.gold["label"] in LABELS for t in bench.tasks("train"))


def test_splits_are_fixed_sized_and_disjoint(bench):
    ids = {s: {t.id.split("/")[-1] for t in bench.tasks(s)} for s in ("train", "dev", "test")}
    assert [len(v) for v in ids.values()] == [200, 200, 200]
    assert not (ids["train"] & ids["dev"]) and not (ids["dev"] & ids["test"]) and not (ids["train"] & ids["test"])
    labels = [t.gold["label"] for t in bench.tasks("dev")]
    assert labels.count("SUPPORTED") == 113 and labels.count("NOT_SUPPORTED") == 87  # SOURCE.md's table


def test_evidence_corpus_is_the_hotpotqa_paragraph_pool(bench):
    corpus = bench.corpus()
    assert len(corpus.paragraphs) == 5931 and corpus is bench.corpus()
    covered = sum(t.meta["gold_titles_in_corpus"] > 0 for t in bench.tasks("dev"))
    assert covered == 21  # documented: evidence is very partial
    hits = corpus.search("David Thewlis actor Remus Lupin", 3)
    assert hits[0]["title"] == "David Thewlis" and len(hits) == 3 and len(hits[0]["text"]) <= 304
    assert hits == corpus.search("David Thewlis actor Remus Lupin", 3)


def test_closedbook_variant_has_no_corpus():
    closed = load_benchmark("hover/closedbook")
    assert closed.id == "hover/closedbook" and closed.corpus() is None
    assert closed.tasks("dev", 1)[0].meta["gold_titles_in_corpus"] == 0
    with pytest.raises(BenchmarkError, match="closedbook"):
        load_benchmark("hover/wiki")


def test_missing_data_dir_names_the_path_and_env_var(tmp_path, monkeypatch):
    with pytest.raises(BenchmarkError) as err:
        HoverBenchmark("closedbook", data_dir=tmp_path / "none").tasks("dev")
    assert str(tmp_path / "none") in str(err.value) and ENV_VAR in str(err.value)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "none"))
    with pytest.raises(BenchmarkError, match=ENV_VAR):
        HoverBenchmark("closedbook").tasks("dev")
    with pytest.raises(BenchmarkError, match="NLGRAD_HOTPOTQA_DIR"):  # default variant also needs the corpus
        HoverBenchmark(hotpotqa_dir=tmp_path / "none-hp").corpus()


def test_data_dir_argument_is_used(tmp_path):
    row = {"id": "c1", "claim": "X is Y. ", "label": "SUPPORTED", "num_hops": 2,
           "supporting_facts": [{"title": "X", "sent_id": 0}], "hpqa_id": "h"}
    for split in ("train", "dev", "test"):
        (tmp_path / f"{split}.jsonl").write_text(json.dumps(row) + "\n")
    (task,) = HoverBenchmark("closedbook", data_dir=tmp_path).tasks("dev")
    assert task.inputs["claim"] == "X is Y." and task.gold["label"] == "SUPPORTED"


@pytest.mark.parametrize("reply, label, matched", [
    ("SUPPORTED", "SUPPORTED", True), ("NOT_SUPPORTED", "NOT_SUPPORTED", True),
    ("Not supported.", "NOT_SUPPORTED", True), ("not-supported", "NOT_SUPPORTED", True),
    ("Label: SUPPORTED", "SUPPORTED", True), ("The claim is true.", "SUPPORTED", True),
    ("False", "NOT_SUPPORTED", True), ("UNSUPPORTED", "NOT_SUPPORTED", True), ("Yes", "SUPPORTED", True),
    ("No, the film came out in 1990.", "NOT_SUPPORTED", True), ("Refuted", "NOT_SUPPORTED", True),
    ("SUPPORTED. It is not wrong.", "SUPPORTED", True), ("The passages do not support it", "NOT_SUPPORTED", True),
    ("", "NOT_SUPPORTED", False), (None, "NOT_SUPPORTED", False), ("asdf 123", "NOT_SUPPORTED", False),
    (42, "NOT_SUPPORTED", False), ({"label": "SUPPORTED"}, "SUPPORTED", True), (["x"], "NOT_SUPPORTED", False),
])
def test_label_parser_is_robust(reply, label, matched):
    parsed = parse_label(reply)
    assert parsed["label"] == label and (parsed["matched"] is not None) is matched


def test_metric_feedback_and_malformed_output(bench):
    task = bench.tasks("dev", 1)[0]  # NOT_SUPPORTED
    good = bench.metric(task, {"label": "NOT_SUPPORTED", "matched": "not supported", "titles": ["John Conyers"]})
    assert good.score == 1.0 and good.success and "gold label NOT_SUPPORTED" in good.feedback
    assert "'John Conyers'" in good.feedback and good.details["gold_titles_retrieved"] == 1
    bad = bench.metric(task, {"label": "SUPPORTED", "matched": "supported", "titles": []})
    assert bad.score == 0.0 and "Wrong" in bad.feedback and "State of the Black Union" in bad.feedback
    assert "exist in the evidence corpus" in bad.feedback
    for junk in (None, "", "???", 7, {"titles": ["x"]}):
        res = bench.metric(task, junk)
        assert res.score == 0.0 and not res.success and "no label" in res.feedback
    assert bench.metric(task, "It is false").success  # a plain string output is parsed too
    default = bench.metric(task, {"label": "NOT_SUPPORTED", "matched": None, "reply": "hmm", "titles": []})
    assert default.success and "default used" in default.feedback


def test_program_records_query_retrieve_verify(bench, make_lm, script):
    script(["Query: John Conyers State of the Black Union", "Answer: NOT_SUPPORTED"])
    program = load_program("hover_verify", benchmark=bench)
    assert program.routes == [QUERY, VERIFY]
    result = Executor(benchmark=bench, program=program, lm=make_lm(), progress=False,
                      keep_traces=True).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None and r.success and r.output["label"] == "NOT_SUPPORTED"
    trace = result.traces[r.task_id]
    assert [n["route"] for n in trace.nodes(kind="module")] == [QUERY, VERIFY]
    (tool,) = trace.nodes(kind="tool")
    assert tool["route"] == "retrieve" and tool["args"]["query"] == "John Conyers State of the Black Union"
    assert tool["result"] == bench.corpus().search("John Conyers State of the Black Union", 3)  # (not in corpus)
    assert r.output["titles"] == [p["title"] for p in tool["result"]] and "0 of 2 gold titles" in r.feedback
    assert tool["id"] in trace.parents(trace.nodes(route=VERIFY)[0]["id"])


def test_closedbook_program_only_verifies(make_lm, script):
    closed = load_benchmark("hover/closedbook")
    script(["banana"])
    program = HoverVerifyProgram(benchmark=closed)
    assert program.routes == [VERIFY]
    result = Executor(benchmark=closed, program=program, lm=make_lm(), progress=False,
                      keep_traces=True).run(closed.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None and r.output["label"] == "NOT_SUPPORTED" and r.output["matched"] is None
    trace = result.traces[r.task_id]
    assert not trace.nodes(kind="tool") and [n["route"] for n in trace.nodes(kind="module")] == [VERIFY]
    assert "Passages" not in trace.nodes(route=VERIFY)[0]["messages"][-1]["content"]


def test_human_policy_loads_and_renders_for_program_routes(bench):
    from nlgrad import policy
    memory = policy.PolicyMemory.load(HoverBenchmark.human_policy)
    program = HoverVerifyProgram(benchmark=bench)
    assert set(memory.routes()) <= set(program.routes)
    text = memory.render(VERIFY)
    assert "NOT_SUPPORTED" in text
    system = program.verify.render(text, {"claim": "c", "passages": []})[0]["content"]
    assert text in system


def test_majority_floor_answers_the_most_common_train_label(bench, make_lm):
    # train: 103 SUPPORTED, 97 NOT_SUPPORTED (shared/data/hover/SOURCE.md); the gold is a record, not a bare label
    floor = load_program("majority_floor", bench)
    assert floor.label == "SUPPORTED"
    tasks = bench.tasks("dev", 30)
    result = Executor(benchmark=bench, program=floor, lm=make_lm(), progress=False).run(tasks)
    expected = sum(t.gold["label"] == "SUPPORTED" for t in tasks) / len(tasks)
    assert [r.output for r in result.results] == ["SUPPORTED"] * 30
    assert sum(r.score for r in result.results) / 30 == pytest.approx(expected)
