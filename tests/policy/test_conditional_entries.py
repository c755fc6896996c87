"""Conditional lessons: an entry with match patterns is shown only to calls whose input matches; the executor records
which entries each call saw; the CLI and the Python API select the same way."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from nlgrad.cli import app
from nlgrad.policy import PolicyMemory, apply_update
from nlgrad.policy.ops import AddOp, EditOp
from nlgrad.policy.relevance import EmbeddingSelector, PatternSelector, unmatched_conditions
from nlgrad.policy.schema import PolicyEntry
from nlgrad.policy.update_report import UpdateProvenance

ROUTE = "if.answer"


def memory() -> PolicyMemory:
    return PolicyMemory(program="if_follow", routes={ROUTE: [
        PolicyEntry(text="End with the postscript the request asks for.", when="the request asks for a P.S.",
                    match=[r"P\.S\.", "postscript"]),
        PolicyEntry(text="Reply with valid JSON only, no prose around it.", match=["json"], helpful=2),
        PolicyEntry(text="Follow every instruction in the request."),
    ]})


def shown(mem: PolicyMemory, text: str, **kw) -> list[str]:
    return [e.text.split()[0] for e in mem.shown_entries(ROUTE, text, **kw)]


def test_only_matching_conditional_entries_and_every_unconditional_one_are_shown():
    mem = memory()
    assert shown(mem, "Write a haiku. At the end add a postscript.") == ["End", "Follow"]
    assert shown(mem, "Wrap the answer in JSON.") == ["Reply", "Follow"]
    assert shown(mem, "Describe a cat.") == ["Follow"]
    assert shown(mem, "Use JSON and add a P.S. at the end") == ["Reply", "End", "Follow"]  # utility order kept
    assert shown(mem, "Write to a jsonl file") == ["Follow"]  # a word matches as a word
    # without an input the route renders whole, as before conditions existed
    assert mem.render(ROUTE).count("\n") == 2
    assert mem.render(ROUTE, for_input="Describe a cat.") == "- Follow every instruction in the request."


def test_top_k_caps_conditional_entries_only():
    mem = memory()
    text = "Use JSON and add a P.S. at the end"
    assert shown(mem, text, selector=PatternSelector(top_k=1)) == ["Reply", "Follow"]
    assert shown(mem, text, selector=PatternSelector(top_k=0)) == ["Follow"]


def test_embedding_selector_shows_a_when_only_entry_by_similarity():
    def embed(texts):  # two fixed directions: about length, about anything else
        return [[1.0, 0.0] if "words" in t or "long" in t else [0.0, 1.0] for t in texts]

    mem = PolicyMemory(program="p", routes={ROUTE: [
        PolicyEntry(text="Count the words before answering.", when="the request limits how long the answer is"),
        PolicyEntry(text="Be polite."),
    ]})
    selector = EmbeddingSelector(embed=embed, threshold=0.5)
    assert shown(mem, "Answer in at most 50 words.", selector=selector) == ["Count", "Be"]
    assert shown(mem, "Name a colour.", selector=selector) == ["Be"]
    assert shown(mem, "Name a colour.") == ["Count", "Be"]  # the pattern selector leaves a when-only entry shown


def test_bad_patterns_are_refused_with_the_field_and_value():
    with pytest.raises(ValueError, match="regular expression"):
        PolicyEntry(text="x", match=["(unclosed"])
    with pytest.raises(ValueError, match="at most 12"):
        PolicyEntry(text="x", match=[f"w{i}" for i in range(13)])
    with pytest.raises(ValueError, match="regular expression"):
        AddOp(route=ROUTE, text="x", match=["[a-"])


def test_operations_set_and_change_conditions_and_files_keep_them():
    mem = memory()
    new, report = apply_update(mem, [AddOp(route=ROUTE, text="Write every letter in capitals.",
                                           match=["capital letters", "uppercase"])], None,
                               UpdateProvenance(source="test", iteration=1))
    added = [e for e in new.entries(ROUTE) if e.match == ["capital letters", "uppercase"]]
    assert len(added) == 1 and report.changed
    edited, _ = apply_update(new, [EditOp(id=added[0].id, match=[])], None,
                             UpdateProvenance(source="test", iteration=2))
    assert edited.find(added[0].id)[2].match == []  # now unconditional
    again = PolicyMemory.model_validate(json.loads(new.to_json()))
    assert [e.match for e in again.entries(ROUTE)] == [e.match for e in new.entries(ROUTE)]
    assert '"match"' not in PolicyMemory(program="p", routes={ROUTE: [PolicyEntry(text="x")]}).to_json()


def test_a_condition_that_matches_no_train_input_is_flagged():
    flagged = unmatched_conditions(memory().entries(ROUTE), ["Write JSON.", "Describe a dog."])
    assert [e.text.split()[0] for e in flagged] == ["End"]


def test_cli_renders_for_one_input_and_show_displays_the_condition(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(memory().to_json())
    runner = CliRunner()
    result = runner.invoke(app, ["policy", "render", str(path), "--route", ROUTE, "--for-input", "add a P.S. please"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["- When the request asks for a P.S., end with the postscript the request "
                                          "asks for.", "- Follow every instruction in the request."]
    missing_route = runner.invoke(app, ["policy", "render", str(path), "--for-input", "x"])
    assert missing_route.exit_code == 2 and "--route" in missing_route.output
    show = runner.invoke(app, ["policy", "show", str(path)], env={"COLUMNS": "200"})
    assert "shown only for inputs matching: P\\.S\\. | postscript" in show.output


def test_each_module_call_sees_only_its_entries_and_the_trace_records_them(script, make_lm):
    from nlgrad.runtime.context import RunContext
    from nlgrad.runtime.module import Module
    from nlgrad.runtime.protocols import Task
    from nlgrad.runtime.trace import Trace

    script(["ok", "ok"])
    template = "{% block system %}{{ policy }}{% endblock %}{% block user %}{{ request }}{% endblock %}"
    module = Module(route=ROUTE, template=template, role="agent")
    mem = memory()
    for request, expected in [("Reply in JSON", 2), ("Tell a story", 1)]:
        trace = Trace(task_id=request)
        ctx = RunContext(task=Task(id=request, split="dev", inputs={"request": request}), lm=make_lm(),
                         trace=trace, policy=mem)
        ctx.call(module, request=request)
        (node,) = trace.module_calls()
        assert len(node["policy_entries"]) == expected
        assert node["policy"] == mem.render(ROUTE, for_input=request)
        assert node["policy_entries"] == [e.id for e in mem.shown_entries(ROUTE, request)]


def test_one_selection_gives_a_call_its_text_and_the_ids_it_shows(script, make_lm):
    from nlgrad.policy.view import PolicyView
    from nlgrad.runtime.context import RunContext
    from nlgrad.runtime.module import Module
    from nlgrad.runtime.protocols import SelectingPolicySource, Task
    from nlgrad.runtime.trace import Trace

    class CountingSelector(PatternSelector):
        calls = 0

        def select(self, entries, text):
            CountingSelector.calls += 1
            return super().select(entries, text)

    mem = memory()
    for source in (mem, PolicyView(mem), PolicyView(mem, whole=True)):
        assert isinstance(source, SelectingPolicySource)
        for request in ("Reply in JSON", "Tell a story", "Use JSON and add a P.S."):
            text, ids = source.render_shown(ROUTE, request)
            assert text == source.render(ROUTE, for_input=request)
            assert ids == [e.id for e in source.shown_entries(ROUTE, request)]

    script(["ok"])
    template = "{% block system %}{{ policy }}{% endblock %}{% block user %}{{ request }}{% endblock %}"
    trace = Trace(task_id="t")
    ctx = RunContext(task=Task(id="t", split="dev", inputs={}), lm=make_lm(), trace=trace,
                     policy=PolicyView(mem, selector=CountingSelector()))
    ctx.call(Module(route=ROUTE, template=template), request="Reply in JSON")
    (node,) = trace.module_calls()
    assert CountingSelector.calls == 1  # the text and the recorded ids come from the same selection
    assert node["policy"] == mem.render(ROUTE, for_input="Reply in JSON") and len(node["policy_entries"]) == 2


def test_a_view_renders_whole_or_places_the_lessons_before_the_input(script, make_lm):
    from nlgrad.policy.view import PolicyView
    from nlgrad.runtime.context import RunContext
    from nlgrad.runtime.module import INPUT_LESSONS_HEADER, Module
    from nlgrad.runtime.protocols import Task
    from nlgrad.runtime.trace import Trace

    mem = memory()
    whole = PolicyView(mem, whole=True)
    assert whole.render(ROUTE, for_input="Describe a cat.") == mem.render(ROUTE)
    assert len(whole.shown_entries(ROUTE, "Describe a cat.")) == 3 and whole.routes() == mem.routes()
    with pytest.raises(ValueError, match="placement"):
        PolicyView(mem, placement="footer")

    script(["ok"])
    template = ("{% block system %}Be helpful.{% if policy %} Lessons: {{ policy }}{% endif %}{% endblock %}"
                "{% block user %}{{ request }}\nAnswer:{% endblock %}")
    trace = Trace(task_id="t")
    ctx = RunContext(task=Task(id="t", split="dev", inputs={}), lm=make_lm(), trace=trace,
                     policy=PolicyView(mem, placement="input"))
    ctx.call(Module(route=ROUTE, template=template), request="Reply in JSON")
    system, user = trace.module_calls()[0]["messages"]
    assert system["content"] == "Be helpful."  # the template's slot is left empty
    assert user["content"] == (f"{INPUT_LESSONS_HEADER}\n" + mem.render(ROUTE, for_input="Reply in JSON")
                               + "\n\nReply in JSON\nAnswer:")  # lessons first, the template's cue stays last


def test_demos_placement_shows_examples_as_prior_turns(script, make_lm):
    from nlgrad.policy.examples import format_example, split_example
    from nlgrad.policy.view import PolicyView
    from nlgrad.runtime.context import RunContext
    from nlgrad.runtime.module import Module
    from nlgrad.runtime.protocols import Task
    from nlgrad.runtime.trace import Trace

    one = format_example({"request": "Describe a dog in JSON"}, '{"animal": "dog"}')
    assert split_example(one) == ("Describe a dog in JSON", '{"animal": "dog"}')
    two = format_example({"question": "Who?", "passage": "Ann met Bo.\nBo left."}, "Ann")
    assert split_example(two) == ("question: Who?\npassage:\n  Ann met Bo.\n  Bo left.", "Ann")
    assert split_example("Never type a comma.") is None and split_example("Input: x") is None

    mem = PolicyMemory.model_validate({"program": "p", "routes": {ROUTE: [
        {"text": "Answer briefly."},
        {"text": one, "kind": "example"},
        {"text": format_example({"request": "Write a poem"}, "roses"), "kind": "example", "match": ["poem"]}]}})
    class CountingSelector(PatternSelector):
        calls = 0

        def select(self, entries, text):
            CountingSelector.calls += 1
            return super().select(entries, text)

    view = PolicyView(mem, placement="demos", selector=CountingSelector())
    assert view.demos(ROUTE, "Reply in JSON") == [("Describe a dog in JSON", '{"animal": "dog"}')]
    CountingSelector.calls = 0
    assert PolicyView(mem).demos(ROUTE, "Reply in JSON") == []  # other placements keep examples in the text
    script(["ok"])
    template = ("{% block system %}Be helpful.{% if policy %} Lessons: {{ policy }}{% endif %}{% endblock %}"
                "{% block user %}{{ request }}{% endblock %}")
    trace = Trace(task_id="t")
    ctx = RunContext(task=Task(id="t", split="dev", inputs={}), lm=make_lm(), trace=trace, policy=view)
    ctx.call(Module(route=ROUTE, template=template), request="Reply in JSON")
    (node,) = trace.module_calls()
    assert [m["role"] for m in node["messages"]] == ["system", "user", "assistant", "user"]
    assert node["messages"][0]["content"] == "Be helpful. Lessons: - Answer briefly."  # the example is a turn instead
    assert node["messages"][1:3] == [{"role": "user", "content": "Describe a dog in JSON"},
                                     {"role": "assistant", "content": '{"animal": "dog"}'}]
    assert node["policy_entries"] == [f"{ROUTE}#1", f"{ROUTE}#2"]  # the turn is recorded as shown
    assert CountingSelector.calls == 1  # the slot text, the recorded ids and the turns come from one selection


def test_eval_flags_conditions_that_no_call_was_shown(settings, tmp_path, monkeypatch):
    import nlgrad.evaluate
    from fake_lm import EchoProgram, UpperCaseBenchmark, agent_reply, install_fake_lm, serve_toy

    from nlgrad.evaluate import EvalRequest, run_eval
    from nlgrad.policy.relevance import conditions_never_shown

    class Prog(EchoProgram):
        name, routes = "shout", ["shout.say"]
        template = ("{% block system %}Repeat.{% if policy %} {{ policy }}{% endif %}{% endblock %}"
                    "{% block user %}{{ text }}{% endblock %}")

    install_fake_lm(monkeypatch, lambda messages: agent_reply(messages[0]["content"], messages[-1]["content"]))
    serve_toy(monkeypatch, UpperCaseBenchmark(), Prog, modules=(nlgrad.evaluate,))
    mem = PolicyMemory.model_validate({"program": "shout", "routes": {"shout.say": [
        {"text": "Always write in capitals."}, {"text": "Count the words.", "match": ["word"]},
        {"text": "Mind the recipe.", "match": ["recipe"]}], "other.route": [{"text": "x y z", "match": ["q"]}]}})
    path = mem.save(tmp_path / "p.json")
    result, _ = run_eval(EvalRequest(benchmark="x", split="dev", n=3, policy=str(path)), settings, progress=False)
    assert result.summary["conditions_never_shown"] == ["shout.say#3"]  # the recipe condition fired nowhere
    assert json.loads((result.run_dir.path / "summary.json").read_text())["conditions_never_shown"] == ["shout.say#3"]
    assert conditions_never_shown({"r": mem.active_entries("shout.say")}, []) == []  # a route no call reached
