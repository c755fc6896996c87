"""NLPG's optional abstraction step: general lessons across a route's specific corrections, support from traces."""

import json

from fake_lm import UPPER_RULE, critic_reply, agent_reply, install_fake_lm
from nlgrad.methods.base import OptimizeConfig
from nlgrad.methods.nlpg.abstraction import CorrectionAbstractor
from nlgrad.methods.nlpg.proposals import Candidate
from nlgrad.optimize import run_optimize
from nlgrad.policy import PolicyStore

ROUTE = "twx.act"
CANDIDATES = [
    Candidate(ROUTE, "When you take the toaster, put it in the kitchen cupboard.", None, ["t/1"]),
    Candidate(ROUTE, "When you take the clean spoon, put it in the cutlery drawer.", None, ["t/2"]),
    Candidate(ROUTE, "Put the long coat in the wardrobe.", None, ["t/3"]),
    Candidate(ROUTE, "Put the wet towel on the towel rack.", None, ["t/3"]),
    Candidate("other.route", "Never look at the map.", None, ["t/9"]),
]


def lessons(*items) -> str:
    return json.dumps({"lessons": [{"text": t, "when": "", "covers": c} for t, c in items]})


def test_general_lessons_take_the_union_of_covered_traces(make_lm, monkeypatch):
    reply = lessons(("Put each object you take where such objects usually belong.", [1, 2, 3, "x", 99]),
                    ("Open cupboard 7 before anything else.", [1, 2]),
                    ("Check the room for a matching container first.", [2]),
                    ("Put clothes and towels where they are kept in a bedroom or bathroom.", [3, 4]))
    calls = install_fake_lm(monkeypatch, lambda messages: reply)
    abstractor = CorrectionAbstractor(make_lm(), max_lessons=4)
    out = abstractor.abstract(ROUTE, CANDIDATES, instructions="Pick one action.", instance_specific={"7", "toaster"})
    prompt = calls[0][-1]["content"]
    assert "1. When you take the toaster" in prompt and "4. Put the wet towel" in prompt
    assert "Never look at the map" not in prompt  # only this route's candidates
    assert [(c.text, c.trace_ids) for c in out] == [
        ("Put each object you take where such objects usually belong.", ["t/1", "t/2", "t/3"]),
        # two candidates from one failed trace: a generalization of them is still support 1
        ("Put clothes and towels where they are kept in a bedroom or bathroom.", ["t/3"])]
    assert out[0].support == 3 and out[1].support == 1
    assert out[0].notes[0] == "generalizes: When you take the toaster, put it in the kitchen cupboard."
    reasons = {d["text"]: d["reason"] for d in abstractor.dropped}
    assert reasons["Open cupboard 7 before anything else."] == "copies instance details: 7"
    assert reasons["Check the room for a matching container first."] == "covers fewer than two of the candidates"


def test_nothing_to_abstract_makes_no_call_and_bad_replies_are_recorded(make_lm, monkeypatch):
    calls = install_fake_lm(monkeypatch, lambda messages: "not json at all")
    abstractor = CorrectionAbstractor(make_lm())
    assert abstractor.abstract("other.route", CANDIDATES) == [] and calls == []  # one distinct candidate
    assert abstractor.abstract(ROUTE, CANDIDATES) == []
    assert calls and abstractor.skipped and abstractor.skipped[0]["route"] == ROUTE


SPECIFIC = [{"text": "Begin the reply with a capital W.", "when": "", "evidence": [1]},
            {"text": "Shout every digit you are given.", "when": "", "evidence": [2]}]


def abstraction_world(messages) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if '"lessons"' in user:
        return lessons((UPPER_RULE, [1, 2]))
    reply = critic_reply(user, "shout.say", SPECIFIC)
    return agent_reply(system, user) if reply is None else reply


def run(tmp_path, settings, **options):
    cfg = OptimizeConfig(benchmark="shout", iterations=1, batch=4, val=4, test_n=4,
                         method_options={"support_from_feedback": False, **options})
    return run_optimize(cfg, settings, tmp_path, progress=False)


def test_nlpg_learns_only_through_abstraction_when_each_correction_is_one_off(settings, shout, tmp_path,
                                                                              monkeypatch):
    install_fake_lm(monkeypatch, abstraction_world)
    run(tmp_path / "plain", settings)
    assert PolicyStore(tmp_path / "plain").versions() == [1]
    assert json.loads((tmp_path / "plain/run/iter-0001/aggregate.json").read_text())["kept"] == []  # support 1 each
    assert not (tmp_path / "plain/run/iter-0001/abstractions.json").exists()

    run(tmp_path / "abstract", settings, abstract=True)
    store = PolicyStore(tmp_path / "abstract")
    assert store.versions() == [1, 2]
    assert [e.text for e in store.load(2).active_entries("shout.say")] == [UPPER_RULE]
    saved = json.loads((tmp_path / "abstract/run/iter-0001/abstractions.json").read_text())
    assert [g["text"] for g in saved["general"]] == [UPPER_RULE] and saved["general"][0]["support"] == 2


def test_restatements_concatenations_and_the_worked_example_are_not_generalizations(make_lm, monkeypatch):
    from nlgrad.methods.nlpg.abstraction import EXAMPLE_LESSON

    concatenated = f"{CANDIDATES[0].text} {CANDIDATES[1].text}"
    reply = lessons((concatenated, [1, 2]), (EXAMPLE_LESSON, [1, 2]),
                    ("Put each object you take where such objects usually belong.", [1, 2]))
    install_fake_lm(monkeypatch, lambda messages: reply)
    abstractor = CorrectionAbstractor(make_lm())
    out = abstractor.abstract(ROUTE, CANDIDATES)
    assert [c.text for c in out] == ["Put each object you take where such objects usually belong."]
    reasons = {d["text"]: d["reason"] for d in abstractor.dropped}
    assert reasons[concatenated] == "restates covered candidate(s) [1, 2] instead of generalizing them"
    assert reasons[EXAMPLE_LESSON] == "copies the prompt's worked example"
