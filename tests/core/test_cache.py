import json
import os

from nlgrad.config import RoleConfig, Settings
from nlgrad.lm.cache import ReplyCache, cache_key
from nlgrad.lm.client import LM

MSG = [{"role": "user", "content": "What is 2+2?"}]


def test_identical_rerun_is_served_from_cache(make_lm, script):
    rec = script(["four"])
    lm = make_lm()
    first = lm.complete("agent", MSG)
    second = lm.complete("agent", MSG)
    assert first.text == second.text == "four"
    assert not first.cached and second.cached
    assert len(rec.calls) == 1
    usage = lm.ledger.roles["agent"]
    assert (usage.calls, usage.cached) == (1, 1)


def test_new_process_reuses_disk_cache(make_lm, script):
    script(["four"])
    make_lm().complete("agent", MSG)
    rec = script([])  # any call would fail: nothing scripted
    again = make_lm().complete("agent", MSG)
    assert again.cached and again.text == "four" and rec.calls == []


def test_distinct_samples_are_distinct_calls(make_lm, script):
    rec = script(["a", "b", "c"])
    lm = make_lm()
    texts = [lm.complete("agent", MSG, sample_index=i, temperature=0.8).text for i in range(3)]
    assert texts == ["a", "b", "c"] and len(rec.calls) == 3
    assert lm.complete("agent", MSG, sample_index=1, temperature=0.8).cached


def test_key_depends_on_sampling_params_not_timeouts():
    base = cache_key("openai/x", MSG, {"temperature": 0.0, "max_tokens": 10}, 0)
    assert base != cache_key("openai/x", MSG, {"temperature": 0.5, "max_tokens": 10}, 0)
    assert base != cache_key("openai/x", MSG, {"temperature": 0.0, "max_tokens": 11}, 0)
    assert base != cache_key("openai/y", MSG, {"temperature": 0.0, "max_tokens": 10}, 0)
    assert base == cache_key("openai/x", MSG, {"temperature": 0.0, "max_tokens": 10, "timeout": 5,
                                              "api_key": "sk-secret", "api_base": "http://u:p@h"}, 0)


def test_no_cache_calls_every_time(settings, script):
    rec = script(["x", "y"])
    lm = LM(settings.model_copy(update={"use_cache": False}), sleep=lambda s: None)
    assert lm.cache is None
    assert [lm.complete("agent", MSG).text for _ in range(2)] == ["x", "y"] and len(rec.calls) == 2


def test_secrets_never_enter_cache_files(tmp_path, script, monkeypatch):
    secret, base_secret = "sk-live-SECRET-123456", "pa55w0rdXYZ"
    monkeypatch.setenv("MY_PROVIDER_KEY", secret)
    role = RoleConfig(model="openai/test-model", api_key_env="MY_PROVIDER_KEY",
                      api_base=f"https://user:{base_secret}@example.invalid/v1")
    settings = Settings(roles={"agent": role}, cache_dir=tmp_path / "cache", retries=0)
    rec = script(["the reply"])
    lm = LM(settings, sleep=lambda s: None)
    lm.complete("agent", MSG)
    assert rec.calls[0]["api_key"] == secret  # the key is used for the call ...
    lm.cache.close()
    for root, _dirs, files in os.walk(tmp_path / "cache"):
        for name in files:
            blob = open(os.path.join(root, name), "rb").read()
            assert secret.encode() not in blob and base_secret.encode() not in blob  # ... and stored nowhere
    assert secret not in json.dumps(lm.ledger.to_dict())


def test_corrupt_entry_is_a_miss(tmp_path):
    cache = ReplyCache(tmp_path / "c")
    cache._cache.set("k", "not a record")
    assert cache.get("k") is None
