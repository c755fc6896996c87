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
