"""A DSPy rendering of an nlgrad program, for DSPy optimizers (MIPROv2).

:func:`render_program` builds a ``dspy.Module`` with **one ``dspy.Predict`` per route** (attribute = the route with
dots as underscores). Each predictor's signature has the route module's template variables as input fields, one
output field ``reply``, and the route's text as its ``instructions``. ``forward(task_id, task)`` does not call the
predictors: it collects every predictor's current instructions as a candidate ``{route: text}``, turns it into
policy memory (see :mod:`nlgrad.methods.baselines.common`) and runs the *nlgrad* program on that task through
``Workspace.rollouts``. So a DSPy optimizer that rewrites instructions and evaluates the module is evaluating the
same program with the same templates, executor, model, LM cache and rollout counter as every other method; the
instructions it ends with become the policy text.

:class:`NlgradDspyLM` is a ``dspy.BaseLM`` that sends DSPy's calls through nlgrad's ``LM`` for a role (the same
litellm model string and ``api_base`` as nlgrad's role, e.g. ``local/...`` served by the embedded server), cached
and counted in the same ledger. It uses DSPy 3.4's ``BaseLM.forward`` plugin interface (deprecated in 3.4,
removed in 3.5: DSPy 3.5 needs an engine with ``complete(Request) -> Response`` instead); DSPy's own cache is
off because nlgrad's LM caches. A ``rollout_id`` (how DSPy asks for distinct samples of one prompt) becomes
nlgrad's ``sample_index``.
"""

from __future__ import annotations

import re
import warnings
from typing import Any, Callable

from nlgrad.methods.baselines.common import candidate_key, memory_from_candidate
from nlgrad.runtime.module import route_modules


def _dspy():
    from nlgrad.methods.baselines.common import require

    return require("dspy", "dspy", "miprov2")


def make_dspy_lm(lm, role: str):
    """A ``dspy.BaseLM`` whose calls go through nlgrad's ``lm`` for ``role``."""
    dspy = _dspy()
    import litellm

    class NlgradDspyLM(dspy.BaseLM):
        def __init__(self, nl_lm, nl_role: str, **kwargs):
            super().__init__(model=f"nlgrad/{nl_role}:{nl_lm.model_for(nl_role)}", cache=False, **kwargs)
            self.nl_lm, self.nl_role = nl_lm, nl_role

        def forward(self, prompt=None, messages=None, **kwargs):
            params = {**self.kwargs, **kwargs}
            if messages is None:
                messages = [{"role": "user", "content": prompt or ""}]
            rollout = params.get("rollout_id")
            completion = self.nl_lm.complete(
                self.nl_role, [{"role": m["role"], "content": m["content"]} for m in messages],
                temperature=params.get("temperature"), max_tokens=params.get("max_tokens"),
                sample_index=int(rollout) % 1_000_000 if rollout is not None else 0)
            return litellm.ModelResponse(
                model=self.model, choices=[{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": completion.text}}],
                usage={"prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
                       "total_tokens": completion.tokens})

        def copy(self, **kwargs):  # keep the nlgrad LM (BaseLM.copy deep-copies attributes)
            new = NlgradDspyLM(self.nl_lm, self.nl_role)
            new.kwargs = {**self.kwargs, **{k: v for k, v in kwargs.items() if v is not None}}
            return new

    warnings.filterwarnings("ignore", message=".*BaseLM.forward.*", category=DeprecationWarning)
    return NlgradDspyLM(lm, role)


def template_fields(module) -> list[str]:
    """The template variables of a route module (input fields of its DSPy signature), ``policy`` excluded."""
    import jinja2
    from jinja2 import meta

    try:
        names = meta.find_undeclared_variables(jinja2.Environment().parse(module.template))
    except jinja2.TemplateError:
        names = set()
    fields = sorted(n for n in names if n != "policy" and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n))
    return [f for f in fields if f != "reply"] or ["inputs"]


def predictor_name(route: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", route)


def render_program(ws, *, base, seed: dict[str, str], iteration: int,
                   on_rollout: Callable[[int], None] | None = None):
    """``(dspy.Module, {predictor name: route})`` for the workspace's program (see the module docstring)."""
    dspy = _dspy()
    program = ws.program
    modules = route_modules(program)
    tasks = {t.id: t for t in list(ws.train_tasks) + list(ws.val_tasks)}
    route_map = {predictor_name(r): r for r in program.routes}

    class NlgradProgram(dspy.Module):
        def __init__(self):
            super().__init__()
            for name, route in route_map.items():
                fields = template_fields(modules[route]) if route in modules else ["inputs"]
                signature = dspy.Signature(", ".join(fields) + " -> reply", seed[route])
                setattr(self, name, dspy.Predict(signature))

        def candidate(self) -> dict[str, str]:
            return {route: getattr(self, name).signature.instructions for name, route in route_map.items()}

        def forward(self, task_id: str, task: str = ""):  # noqa: ARG002 - task is shown to DSPy's proposer
            candidate = self.candidate()
            memory, _, _ = memory_from_candidate(base, candidate, seed, source="miprov2", iteration=iteration)
            label = f"mipro-{candidate_key(candidate, [task_id])}"
            result = ws.rollouts([tasks[task_id]], memory, label=label, iteration=iteration, keep_traces=False)
            if on_rollout:
                on_rollout(1)
            r = result.results[0]
            return dspy.Prediction(reply=str(r.output), score=float(r.score), feedback=r.feedback)

    return NlgradProgram(), route_map


def to_examples(tasks, *, max_chars: int = 400) -> list[Any]:
    """DSPy examples for nlgrad tasks: ``task_id`` (what forward runs) and a short ``task`` text (what DSPy's
    data-aware proposer reads)."""
    dspy = _dspy()
    out = []
    for task in tasks:
        text = "; ".join(f"{k}: {v}" for k, v in task.inputs.items())
        text = text if len(text) <= max_chars else text[: max_chars - 3] + "..."
        out.append(dspy.Example(task_id=task.id, task=text).with_inputs("task_id", "task"))
    return out


def score_metric(example, prediction, trace=None) -> float:  # noqa: ARG001 - DSPy metric signature
    return float(getattr(prediction, "score", 0.0))
