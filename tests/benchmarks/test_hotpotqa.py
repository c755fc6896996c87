"""HotpotQA: loader on the shared data, splits, metric (EM/F1, malformed output), multi-hop program (scripted LM)."""

import json
import sys

import pytest

from nlgrad.benchmarks.hotpotqa import ENV_VAR, HotpotQABenchmark, gold_titles
from nlgrad.benchmarks.qa_metrics import exact_match, normalize_answer, token_f1
from nlgrad.errors import BenchmarkError
from nlgrad.programs.hotpot_multihop import ANSWER, HOP1, HOP2, HotpotMultiHopProgram, parse_query
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.registry import load_benchmark, load_program
from nlgrad.text import BM25Index, clean_reply, first_sentences, tokenize


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("hotpotqa")


def test_loader_reads_the_shared_files(bench):
    tasks = bench.tasks("dev", 3)
    assert [t.id for t in tasks][0] == "hotpotqa/dev/5ae2ad6b5542996483e64a3d"
    first = tasks[0]
    assert first.inputs["question"].startswith("David Thewlis had a performance")
    assert first.gold["answer"] == "King Duncan"
    assert len(first.inputs["context"]) == 10 and {"title", "sentences"} <= set(first.inputs["context"][0])
    assert gold_titles(first) == ["David Thewlis", "King Duncan"]
    assert first.meta["type"] in ("bridge", "comparison")
    assert "answer" not in first.inputs and "supporting_facts" not in first.inputs


def test_splits_are_fixed_sized_and_disjoint(bench):
    ids = {s: [t.id.split("/")[-1] for t in bench.tasks(s)] for s in ("train", "dev", "test")}
    assert {s: len(v) for s, v in ids.items()} == {"train": 200, "dev": 200, "test": 200}
    assert not (set(ids["train"]) & set(ids["dev"])) and not (set(ids["dev"]) & set(ids["test"]))
    assert not (set(ids["train"]) & set(ids["test"]))
    assert [t.id for t in bench.tasks("dev", 5)] == [t.id for t in HotpotQABenchmark().tasks("dev")[:5]]


def test_missing_data_dir_names_the_path_and_env_var(tmp_path, monkeypatch):
    missing = tmp_path / "nowhere"
    with pytest.raises(BenchmarkError) as err:
        HotpotQABenchmark(data_dir=missing).tasks("dev", 1)
    assert str(missing) in str(err.value) and ENV_VAR in str(err.value)
    monkeypatch.setenv(ENV_VAR, str(missing))
    with pytest.raises(BenchmarkError, match=ENV_VAR):
        HotpotQABenchmark().tasks("dev", 1)


def test_data_dir_argument_is_used(tmp_path):
    row = {"id": "x1", "question": "Q?", "answer": "A", "type": "bridge", "level": "hard",
           "supporting_facts": [{"title": "T", "sent_id": 0}], "context": [{"title": "T", "sentences": ["A is."]}]}
    for split in ("train", "dev", "test"):
        (tmp_path / f"{split}.jsonl").write_text(json.dumps({**row, "id": f"{split}1"}) + "\n")
    tasks = HotpotQABenchmark(data_dir=tmp_path).tasks("test")
    assert [t.id for t in tasks] == ["hotpotqa/test/test1"]


def test_bad_split_and_variant_are_clear_errors(bench):
    with pytest.raises(BenchmarkError, match="validation"):
        bench.tasks("validation")
    with pytest.raises(BenchmarkError, match="fullwiki"):
        load_benchmark("hotpotqa/fullwiki")


def test_hf_mode_without_datasets_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed: never touches the network
    bench = load_benchmark("hotpotqa/hf")
    assert bench.id == "hotpotqa/hf" and bench.use_hf
    with pytest.raises(BenchmarkError, match="datasets"):
        bench.tasks("dev", 1)
    assert not HotpotQABenchmark().use_hf


@pytest.mark.parametrize("pred, gold, em, f1", [
    ("King Duncan", "King Duncan", True, 1.0),
    ("the King Duncan.", "King Duncan", True, 1.0),
    ("Duncan", "King Duncan", False, 2 / 3),
    ("King Duncan of Scotland", "King Duncan", False, 2 * (2 / 4) * 1 / (2 / 4 + 1)),
    ("yes", "no", False, 0.0),
    ("yes it is", "yes", False, 0.0),  # official rule: a yes/no gold needs exactly yes/no
    ("", "King Duncan", False, 0.0),
    (None, "King Duncan", False, 0.0),
    (12, "12", True, 1.0),
    ({"answer": "King Duncan"}, "King Duncan", True, 1.0),
    (["junk", {"x": 1}], "King Duncan", False, 0.0),
])
def test_em_and_f1_hand_checked(pred, gold, em, f1):
    assert exact_match(pred, gold) is em
    assert token_f1(pred, gold) == pytest.approx(f1)


def test_normalization_matches_squad():
    assert normalize_answer("The  Beatles!") == "beatles"
    assert normalize_answer("An apple, a pear") == "apple pear"
    assert normalize_answer(None) == ""


@pytest.mark.parametrize("reply, cleaned", [
    ('Answer: "King Duncan".', "King Duncan"),
    ("\n\n  Query: David Thewlis Macbeth\nmore text", "David Thewlis Macbeth"),
    ("- **Paris**", "Paris"),
    ("Final answer - 1987.", "1987"),
    ("", ""), (None, ""), ("...", ""),
])
def test_clean_reply_strips_prefixes_quotes_and_periods(reply, cleaned):
    assert clean_reply(reply) == cleaned


def _task(bench):
    return bench.tasks("dev", 1)[0]


def test_metric_feedback_names_gold_prediction_and_titles(bench):
    task = _task(bench)
    out = {"answer": "Malcolm", "titles": ["David Thewlis", "Donalbain (Macbeth)"]}
    res = bench.metric(task, out)
    assert res.score == 0.0 and not res.success
    assert "'King Duncan'" in res.feedback and "'Malcolm'" in res.feedback
    assert "King Duncan" in str(res.details["gold_titles"]) and "missed" in res.feedback
    assert res.details["gold_titles_retrieved"] == 1
    good = bench.metric(task, {"answer": "King Duncan.", "titles": ["David Thewlis", "King Duncan"]})
    assert good.score == 1.0 and good.success and "found all gold" in good.feedback


@pytest.mark.parametrize("output", [None, "", "   ", 42, ["a"], {"no_answer": 1}, {"answer": None, "titles": "x"}])
def test_metric_never_raises_on_malformed_output(bench, output):
    res = bench.metric(_task(bench), output)
    assert res.score == 0.0 and res.success is False and "King Duncan" in res.feedback


def test_bm25_is_deterministic_and_handles_edge_cases():
    index = BM25Index(["Paris is the capital of France", "Berlin is in Germany", "", "Lótus Bridge in Macau"])
    assert index.search("capital France", 2)[0][0] == 0
    assert index.search("lotus bridge", 1)[0][0] == 3  # accents folded
    assert [i for i, _ in index.search("", 2)] == [0, 1]  # no terms: document order
    assert [i for i, _ in index.search("capital", 3, exclude=[0])] == [1, 2, 3]
    assert BM25Index([]).search("x", 3) == [] and BM25Index([""]).search("x", 1) == [(0, 0.0)]
    assert tokenize("The Beatles' songs") == ["beatles", "songs"]
    assert first_sentences(["One.", " Two.", " Three.", " Four."], 3) == "One. Two. Three."
    assert first_sentences("word " * 200, 3, 50).endswith("...")


def test_parse_query_falls_back_to_empty_for_junk():
    assert parse_query('Query: "Macbeth King Duncan"', {}) == "Macbeth King Duncan"
    assert parse_query("the of and", {}) == "" and parse_query("", {}) == ""


def test_program_records_routes_tools_and_edges(bench, make_lm, script):
    script(["Search query: David Thewlis Macbeth", "King Duncan", 'Answer: "King Duncan".'])
    program = load_program("hotpot_multihop", benchmark=bench)
    assert program.routes == [HOP1, HOP2, ANSWER]
    result = Executor(benchmark=bench, program=program, lm=make_lm(), progress=False,
                      keep_traces=True).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None and r.score == 1.0 and r.success
    trace = result.traces[r.task_id]
    assert [n["route"] for n in trace.nodes(kind="module")] == [HOP1, HOP2, ANSWER]
    tools = trace.nodes(kind="tool")
    assert [t["route"] for t in tools] == ["retrieve", "retrieve"]
    assert tools[0]["args"]["query"] == "David Thewlis Macbeth" and len(tools[0]["result"]) == 2
    hop2 = trace.nodes(route=HOP2)[0]
    answer = trace.nodes(route=ANSWER)[0]
    assert tools[0]["id"] in trace.parents(hop2["id"])
    assert {tools[0]["id"], tools[1]["id"]} <= set(trace.parents(answer["id"]))
    assert not set(tools[0]["result"][i]["title"] for i in range(2)) & {p["title"] for p in tools[1]["result"]}
    assert len(r.output["titles"]) == 4 and r.output["answer"] == "King Duncan"


def test_program_survives_empty_and_junk_replies(bench, make_lm, script):
    script(["...", "the of", "**"])  # (empty replies are retried and then raised by the LM layer)
    program = HotpotMultiHopProgram(benchmark=bench)
    task = Task(id="t", split="dev", inputs=_task(bench).inputs, gold=_task(bench).gold, meta={})
    result = Executor(benchmark=bench, program=program, lm=make_lm(), progress=False, keep_traces=True).run([task])
    (r,) = result.results
    assert r.error is None and r.score == 0.0 and r.output["answer"] == ""
    assert r.output["queries"] == [task.inputs["question"]] * 2  # empty queries fall back to the question


def test_human_policy_loads_and_renders_for_program_routes(bench):
    from nlgrad import policy
    memory = policy.PolicyMemory.load(HotpotQABenchmark.human_policy)
    program = HotpotMultiHopProgram(benchmark=bench)
    from nlgrad.programs.team_hotpot import TeamHotpotProgram

    # every route is one of the single-agent program's or the team program's (the file advises both)
    assert set(program.routes) <= set(memory.routes()) <= set(program.routes) | set(TeamHotpotProgram().routes)
    text = memory.render(ANSWER)
    assert text.startswith("- ") and 2 <= sum(len(memory.active_entries(r)) for r in program.routes) <= 6
    messages = program.answer.render(text, {"question": "Q?", "passages": []})
    assert text in messages[0]["content"] and "lessons" in messages[0]["content"]
    assert "lessons" not in program.answer.render("", {"question": "Q?", "passages": []})[0]["content"]
