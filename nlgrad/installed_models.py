"""Which local models the roles may use: the settings adjusted to the models installed here.

:mod:`nlgrad.config` says which model plays which role; this module holds what depends on what is installed
(:mod:`nlgrad.lm.local_models`), so that settings never import the model registry (which reads the cache root from
them).
"""

from __future__ import annotations

from nlgrad.config import DEFAULT_AGENT_MODEL, DEFAULT_CRITIC_MODEL, Settings
from nlgrad.lm import local_models
from nlgrad.runtime.protocols import BenchmarkHints


def with_available_local_models(settings: Settings) -> tuple[Settings, list[str]]:
    """Roles that name a built-in local model whose files are not installed fall back to the default agent model.

    Returns the adjusted settings and one warning per replaced role (the 1.5B critic needs the extra 'local-1-5b').
    """
    roles, warnings = dict(settings.roles), []
    for name, role in settings.roles.items():
        if role.model.startswith("local/") and not local_models.is_available(role.model[6:], settings.local_models):
            if role.model == DEFAULT_CRITIC_MODEL and local_models.is_available(DEFAULT_AGENT_MODEL[6:],
                                                                                settings.local_models):
                roles[name] = role.model_copy(update={"model": DEFAULT_AGENT_MODEL})
                warnings.append(f"role {name}: {role.model} is not installed (pip install 'nlgrad[local-1-5b]'); "
                                f"using {DEFAULT_AGENT_MODEL}")
    return settings.model_copy(update={"roles": roles}), warnings


def with_benchmark_agent(settings: Settings, benchmark, explicit_lm: str | None) -> tuple[Settings, list[str]]:
    """The benchmark's own default agent (its ``default_agent`` attribute, e.g. ``local/qwen2.5-coder-1.5b`` for a
    benchmark where only the larger local model follows text) plays the agent unless ``--lm`` named one or the
    settings name another than nlgrad's default. A default agent that is not installed is skipped with a warning."""
    wanted = BenchmarkHints.of(benchmark).default_agent
    if not wanted or explicit_lm or settings.role("agent").model != DEFAULT_AGENT_MODEL:
        return settings, []
    if wanted.startswith("local/") and not local_models.is_available(wanted[6:], settings.local_models):
        return settings, [f"benchmark {benchmark.id} runs with {wanted} by default, which is not installed "
                          f"(pip install 'nlgrad[local-1-5b]'); using {DEFAULT_AGENT_MODEL}"]
    return settings.with_role_model("agent", wanted), []


def learning_settings(settings: Settings, critic_lm: str | None = None) -> tuple[Settings, list[str]]:
    """Settings for learning a policy: ``critic_lm`` (if given) plays both the critic and the optimizer, and local
    models that are not installed are swapped per :func:`with_available_local_models` (its warnings returned)."""
    if critic_lm:
        settings = settings.with_role_model("critic", critic_lm).with_role_model("optimizer", critic_lm)
    return with_available_local_models(settings)
