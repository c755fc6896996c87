import litellm
import pytest

from nlgrad.errors import LMCallError
from nlgrad.lm.retry import EmptyReplyError, backoff_delay, is_retryable

MSG = [{"role": "user", "content": "hi"}]


def _err(cls, **kw):
    return cls(message="x", llm_provider="openai", model="m", **kw)


@pytest.mark.parametrize("exc, expected", [
    (_err(litellm.RateLimitError), True),
    (_err(litellm.InternalServerError), True),
    (_err(litellm.ServiceUnavailableError), True),
    (litellm.Timeout(message="t", model="m", llm_provider="openai"), True),
    (litellm.APIConnectionError(message="c", llm_provider="openai", model="m"), True),
    (EmptyReplyError("empty"), True),
    (_err(litellm.AuthenticationError), False),
    (_err(litellm.BadRequestError), False),
    (_err(litellm.NotFoundError), False),
    (litellm.ContextWindowExceededError(message="x", model="m", llm_provider="openai"), False),
    (ValueError("bug"), False),
])
def test_classification(exc, expected):
    assert is_retryable(exc) is expected


def test_backoff_grows_and_is_capped():
    import random

    rng = random.Random(0)
    delays = [backoff_delay(a, 1.0, 8.0, rng) for a in range(6)]
    assert 0.5 <= delays[0] <= 1.0 and 1.0 <= delays[1] <= 2.0 and 2.0 <= delays[2] <= 4.0
    assert all(d <= 8.0 for d in delays) and delays[5] >= 4.0


def test_transient_errors_are_retried_then_succeed(make_lm, script):
    rec = script(["litellm.RateLimitError", "litellm.InternalServerError", "ok"])
    lm = make_lm()
    out = lm.complete("agent", MSG)
    assert out.text == "ok" and out.retries == 2 and len(rec.calls) == 3
    assert lm.ledger.roles["agent"].retries == 2 and lm.ledger.roles["agent"].calls == 1


def test_empty_reply_is_retried(make_lm, script):
    script(["", "fine"])
    assert make_lm().complete("agent", MSG).text == "fine"


def test_auth_error_is_not_retried(make_lm, script):
    rec = script([_err(litellm.AuthenticationError), "never"])
    with pytest.raises(LMCallError) as info:
        make_lm().complete("agent", MSG)
    assert len(rec.calls) == 1 and not info.value.retryable
    assert "role=agent" in str(info.value) and "openai/test-model" in str(info.value)


def test_gives_up_after_configured_retries(make_lm, script):
    rec = script(["litellm.RateLimitError"] * 4)
    lm = make_lm()
    with pytest.raises(LMCallError):
        lm.complete("agent", MSG)
    assert len(rec.calls) == 4  # 1 + settings.retries (3)
    assert lm.ledger.roles["agent"].errors == 1


def test_timeout_is_passed_per_call(make_lm, script):
    rec = script(["ok"])
    make_lm().complete("agent", MSG)
    assert rec.calls[0]["timeout"] == pytest.approx(180.0) and rec.calls[0]["num_retries"] == 0


def test_persistent_empty_reply_is_returned_not_fatal(make_lm, script):
    rec = script(["", "", "", ""])
    out = make_lm().complete("agent", MSG)
    assert out.text == "" and len(rec.calls) == 4 and out.retries == 3  # remote model: retried up to the limit


def test_local_model_empty_reply_is_retried_once(settings, script, monkeypatch):
    from nlgrad.config import RoleConfig
    from nlgrad.lm.client import LM, _Route

    local = settings.model_copy(update={"roles": {"agent": RoleConfig(model="local/qwen2.5-coder-0.5b")}})
    monkeypatch.setattr(LM, "_route", lambda self, model, cfg: _Route("openai/x", None, "k"))
    rec = script(["", "", "never"])
    out = LM(local, sleep=lambda s: None).complete("agent", MSG)
    assert out.text == "" and len(rec.calls) == 2
