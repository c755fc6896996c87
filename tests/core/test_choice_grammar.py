"""A reply that must be one of a few strings: llama-server gets a GBNF grammar with nothing after the choice (its own
JSON-schema grammar lets a small model spend up to 20 whitespace tokens after the closing quote); other servers keep
the JSON schema."""

import json
import re

import pytest

from nlgrad.config import RoleConfig, Settings
from nlgrad.lm.choice_grammar import choice_grammar, enum_choices
from nlgrad.lm.local_server import ServerInfo

MSG = [{"role": "user", "content": "route this"}]
LABELS = ["card_arrival", "reverted_card_payment?", 'say "hi"', "back\\slash"]
FORMAT = {"type": "json_object", "schema": {"type": "string", "enum": LABELS}}


def gbnf_sentences(grammar: str) -> list[str]:
    """The sentences of a grammar made of one rule of literal alternatives, decoded as GBNF reads its literals."""
    body = grammar.removeprefix("root ::= ")
    literals = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    assert " | ".join(f'"{lit}"' for lit in literals) == body  # nothing but alternatives of literals
    return [re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r", "t": "\t"}.get(m.group(1), m.group(1)), lit)
            for lit in literals]


def test_the_grammar_admits_exactly_each_choice_as_a_json_string_and_nothing_after_it():
    sentences = gbnf_sentences(choice_grammar(FORMAT))
    assert [json.loads(s) for s in sentences] == LABELS
    assert all(s.endswith('"') for s in sentences)  # no trailing whitespace rule


def test_only_a_plain_string_enum_becomes_a_grammar():
    assert enum_choices(FORMAT) == LABELS
    assert choice_grammar({"type": "json_object", "schema": {"type": "object", "properties": {}}}) is None
    assert choice_grammar({"type": "json_object", "schema": {"type": "string", "enum": LABELS, "minLength": 2}}) is None
    assert choice_grammar({"type": "json_object", "schema": {"type": "string", "enum": []}}) is None
    assert choice_grammar(None) is None


@pytest.fixture
def local_lm(tmp_path, make_lm, monkeypatch):
    def build(backend: str):
        role = RoleConfig(model="local/qwen2.5-coder-0.5b", max_tokens=24)
        lm = make_lm(settings=Settings(roles={"agent": role}, cache_dir=tmp_path / backend, runs_dir=tmp_path / "runs",
                                       retries=1, backoff_base_s=0.001, backoff_max_s=0.002))
        info = ServerInfo(name="qwen2.5-coder-0.5b", pid=1, port=9, model_path="m.gguf", owner="detached",
                          log_path="log", backend=backend, slots=2)
        monkeypatch.setattr(lm.servers, "ensure", lambda name: info)
        monkeypatch.setattr(lm, "_fingerprint", lambda model: "fp")
        return lm

    return build


def test_llama_server_gets_the_grammar_instead_of_the_schema(local_lm, script):
    rec = script(['"card_arrival"'])
    assert local_lm("llama-server").complete("agent", MSG, response_format=FORMAT).text == '"card_arrival"'
    sent = rec.calls[0]
    assert "response_format" not in sent and "grammar" not in sent
    assert sent["extra_body"]["grammar"] == choice_grammar(FORMAT)


def test_another_local_server_keeps_the_json_schema(local_lm, script):
    rec = script(['"card_arrival"'])
    local_lm("python").complete("agent", MSG, response_format=FORMAT)
    sent = rec.calls[0]
    assert sent["response_format"] == FORMAT and "extra_body" not in sent and "grammar" not in sent


def test_a_remote_model_keeps_the_json_schema(make_lm, script):
    rec = script(['"card_arrival"'])
    make_lm().complete("agent", MSG, response_format=FORMAT)
    assert rec.calls[0]["response_format"] == FORMAT and "extra_body" not in rec.calls[0]
