import pytest
from pydantic import BaseModel

from nlgrad.errors import StructuredOutputError
from nlgrad.lm.structured import extract_json

MSG = [{"role": "user", "content": "diagnose"}]


class Diagnosis(BaseModel):
    route: str
    severity: int


def test_extract_json_from_prose_and_fences():
    assert extract_json('Sure! ```json\n{"a": 1}\n``` done') == '{"a": 1}'
    assert extract_json('Here: {"a": {"b": "}"}} trailing') == '{"a": {"b": "}"}}'
    assert extract_json("[1, 2] and more") == "[1, 2]"


def test_valid_reply_needs_one_call(make_lm, script):
    rec = script(['{"route": "twx.act", "severity": 2}'])
    assert make_lm().structured("critic", MSG, Diagnosis) == Diagnosis(route="twx.act", severity=2)
    assert len(rec.calls) == 1


def test_reask_once_with_the_validation_error(make_lm, script):
    rec = script(['{"route": "twx.act", "severity": "high"}', 'OK: {"route": "twx.act", "severity": 3}'])
    assert make_lm().structured("critic", MSG, Diagnosis).severity == 3
    reask = rec.calls[1]["messages"]
    assert reask[-2]["role"] == "assistant" and "severity" in reask[-1]["content"]


def test_second_failure_raises_typed_error_naming_role_model_text(make_lm, script):
    script(["not json at all", "still " + "x" * 1000])
    with pytest.raises(StructuredOutputError) as info:
        make_lm().structured("critic", MSG, Diagnosis)
    msg = str(info.value)
    assert "role=critic" in msg and "openai/test-model" in msg and "Diagnosis" in msg
    assert "still xxx" in msg and "more chars" in msg  # offending text, truncated


def test_reask_shows_a_filled_in_example_not_the_raw_schema(make_lm, script):
    rec = script(['{"route": 3}', '{"route": "twx.act", "severity": 1}'])
    make_lm().structured("critic", MSG, Diagnosis)
    reask = rec.calls[1]["messages"][-1]["content"]
    assert '"route": "<string: Route>"' in reask and '"severity": "<integer: Severity>"' in reask
    assert '"properties"' not in reask  # a small model copies a raw JSON Schema back verbatim


def test_remote_models_get_no_grammar(make_lm, script):
    rec = script(['{"route": "a", "severity": 1}'])
    make_lm().structured("critic", MSG, Diagnosis)
    assert "response_format" not in rec.calls[0]


def test_local_models_decode_with_the_schema_as_grammar_and_it_keys_the_cache(make_lm, script, monkeypatch):
    lm = make_lm()
    monkeypatch.setattr(type(lm), "constrains_json", lambda self, role: True)
    rec = script(['{"route": "a", "severity": 1}', '{"route": "b", "severity": 2}'])
    assert lm.structured("critic", MSG, Diagnosis).route == "a"
    fmt = rec.calls[0]["response_format"]
    assert fmt["type"] == "json_object" and fmt["schema"] == Diagnosis.model_json_schema()
    # the same messages without the grammar are a different cache entry, so they reach the model
    assert lm.complete("critic", MSG).text == '{"route": "b", "severity": 2}'
    assert lm.structured("critic", MSG, Diagnosis).route == "a" and len(rec.calls) == 2
