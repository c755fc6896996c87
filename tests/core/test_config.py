import pytest

from nlgrad.config import load_settings
from nlgrad.errors import ConfigError


def test_defaults_use_local_models():
    s = load_settings()
    assert s.role("agent").model == "local/qwen2.5-coder-0.5b"
    assert s.role("critic").model == "local/qwen2.5-coder-1.5b"


def test_toml_file_overrides_roles(tmp_path):
    path = tmp_path / "nlgrad.toml"
    path.write_text('retries = 2\n[roles.critic]\nmodel = "openai/gpt-4o-mini"\napi_key_env = "OPENAI_API_KEY"\n')
    s = load_settings(path)
    assert s.retries == 2 and s.role("critic").model == "openai/gpt-4o-mini"
    assert s.role("agent").model == "local/qwen2.5-coder-0.5b"


@pytest.mark.parametrize("text, field, value", [
    ("retries = -1\n", "retries", "-1"),
    ('[roles.agent]\nmodel = "nomodel"\n', "roles.agent.model", "nomodel"),
    ('[roles.agent]\ntemperature = 9\n', "roles.agent.temperature", "9"),
])
def test_bad_values_name_file_field_and_value(tmp_path, text, field, value):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    msg = str(info.value)
    assert "bad.toml" in msg and f"field: {field}" in msg
    assert "value: " in msg and value in msg.split("value: ", 1)[1]


def test_unknown_key_is_named_but_its_value_is_not_echoed(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('bogus_token = "sk-live-abc123"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    msg = str(info.value)
    assert "bad.toml" in msg and "field: bogus_token" in msg and "unknown setting" in msg
    assert "sk-live-abc123" not in msg


def test_invalid_toml_and_missing_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("retries = [1,\n")
    with pytest.raises(ConfigError, match="broken.toml"):
        load_settings(path)
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "absent.toml")


def test_lm_option_is_validated():
    with pytest.raises(ConfigError, match="--lm"):
        load_settings().with_role_model("agent", "gpt4")


def test_learning_settings_gives_critic_lm_both_learning_roles():
    from nlgrad.installed_models import learning_settings

    base = load_settings(None)
    settings, _ = learning_settings(base, "openai/gpt-4o-mini")
    assert settings.role("critic").model == settings.role("optimizer").model == "openai/gpt-4o-mini"
    assert settings.role("agent").model == base.role("agent").model
    unchanged, _ = learning_settings(base, None)
    assert unchanged.role("optimizer").model == unchanged.role("critic").model


def test_a_benchmark_names_its_default_agent_unless_lm_or_settings_chose_one(monkeypatch):
    from types import SimpleNamespace

    from nlgrad.config import DEFAULT_AGENT_MODEL, Settings
    from nlgrad.installed_models import with_benchmark_agent
    from nlgrad.lm import local_models

    bench = SimpleNamespace(id="ifeval", default_agent="local/qwen2.5-coder-1.5b")
    monkeypatch.setattr(local_models, "is_available", lambda name, user=None: True)
    chosen, warnings = with_benchmark_agent(Settings(), bench, None)
    assert chosen.role("agent").model == "local/qwen2.5-coder-1.5b" and warnings == []
    explicit = Settings().with_role_model("agent", "local/qwen2.5-coder-0.5b")
    assert with_benchmark_agent(explicit, bench, "local/qwen2.5-coder-0.5b")[0].role("agent").model == DEFAULT_AGENT_MODEL
    other = Settings().with_role_model("agent", "openai/gpt-4o-mini")  # e.g. from a config file
    assert with_benchmark_agent(other, bench, None)[0].role("agent").model == "openai/gpt-4o-mini"
    assert with_benchmark_agent(Settings(), SimpleNamespace(id="hotpotqa"), None)[0].role("agent").model \
        == DEFAULT_AGENT_MODEL
    monkeypatch.setattr(local_models, "is_available", lambda name, user=None: False)
    kept, warnings = with_benchmark_agent(Settings(), bench, None)
    assert kept.role("agent").model == DEFAULT_AGENT_MODEL and "not installed" in warnings[0]
