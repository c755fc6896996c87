"""TextGrad (the ``textgrad`` package): textual gradient descent on the route texts of the same program.

One ``propose`` is one TGD step, as in TextGrad's prompt-optimization recipe (forward on a train batch, loss,
``backward``, ``TextualGradientDescent.step``; the shared gate then validates and keeps or reverts, which is the
recipe's "validate and revert" step):

1. roll out a seeded train batch with the current policy (``Workspace.rollouts``: the nlgrad executor);
2. per route, a ``tg.Variable`` holding the route's text (``requires_grad=True``);
3. for each chosen trace (failures first), the last ``steps_per_trace`` calls of every route become textgrad
   ``LLMCall`` nodes over the *recorded* call (system prompt, user message, reply: the agent is not called again),
   with the route's text variable as the system-prompt predecessor; the loss is a ``StringBasedFunction`` of
   those replies whose output is the benchmark metric's score and feedback;
4. ``tg.sum(losses).backward(engine)`` (textgrad's backward prompts), then ``TextualGradientDescent.step`` per
   route variable that received feedback; the new texts become policy memory (one ``rule`` entry per changed
   route, see :mod:`nlgrad.methods.baselines.common`).

Engine: :class:`NlgradEngine`, a ``textgrad`` ``EngineLM`` over nlgrad's ``LM`` for the ``optimizer`` role (same
litellm model string and ``api_base``, cached and counted in the same ledger). textgrad's own litellm engine
(``get_engine("experimental:<model>")``) calls ``litellm.completion(model, messages)`` without ``api_base`` or an
API key, so it cannot reach nlgrad's local model servers; with ``engine="textgrad"`` this method uses it for
hosted model strings (e.g. ``openai/gpt-4o-mini``) — its calls are then *not* in nlgrad's token counts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nlgrad.errors import ConfigError
from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.baselines.common import memory_from_candidate, require, same_policy, seed_candidate
from nlgrad.policy import PolicyMemory
from nlgrad.text import clip


def import_textgrad(log_dir: Path, method: str = "textgrad"):
    """The ``textgrad`` module. Its import opens a log file of every prompt under ``$TEXTGRAD_LOG_DIR``, by default
    ``./logs/`` in the working directory; unless the user set that variable, ``log_dir`` (the run folder) gets it."""
    os.environ.setdefault("TEXTGRAD_LOG_DIR", str(log_dir))
    return require("textgrad", "textgrad", method)


def make_engine(lm, role: str = "optimizer", max_tokens: int | None = None):
    """A textgrad ``EngineLM`` whose calls go through nlgrad's ``lm`` for ``role``."""
    require("textgrad", "textgrad", "textgrad")
    from textgrad.engine import EngineLM

    class NlgradEngine(EngineLM):
        def __init__(self):
            self.model_string = f"nlgrad/{role}:{lm.model_for(role)}"
            self.system_prompt = "You are a helpful, creative, and smart assistant."
            self.is_multimodal = False
            self.calls = 0

        def generate(self, prompt, system_prompt=None, **kwargs):  # noqa: ARG002 - textgrad's signature
            messages = [{"role": "system", "content": system_prompt or self.system_prompt},
                        {"role": "user", "content": prompt if isinstance(prompt, str) else str(prompt)}]
            self.calls += 1
            return lm.complete(role, messages, max_tokens=max_tokens).text

        def __call__(self, prompt, **kwargs):
            return self.generate(prompt, **kwargs)

    return NlgradEngine()


class TextGrad:
    name = "textgrad"
    reference = True  # nlgrad compare may take it as the reference row (the strongest baseline)

    def __init__(self, *, engine: str = "nlgrad", max_traces: int = 3, steps_per_trace: int = 1,
                 max_chars: int = 1500, max_tokens: int | None = None):
        if engine != "nlgrad" and not engine.startswith("textgrad"):
            raise ConfigError("engine is 'nlgrad' (nlgrad's LM, counted) or 'textgrad' (textgrad's own litellm "
                              "engine for hosted models)", field="textgrad.engine", value=engine)
        self.engine_kind, self.max_traces, self.steps_per_trace = engine, max_traces, steps_per_trace
        self.max_chars, self.max_tokens = max_chars, max_tokens

    def _engine(self, ws: Workspace):
        if self.engine_kind == "nlgrad":
            return make_engine(ws.lm, "optimizer", self.max_tokens)
        tg = require("textgrad", "textgrad", self.name)
        model = ws.lm.model_for("optimizer")
        if model.startswith("local/"):
            raise ConfigError("textgrad's own litellm engine cannot reach nlgrad's local model servers (it passes "
                              "no api_base); use engine=nlgrad", field="textgrad.engine", value=model)
        return tg.get_engine(f"experimental:{model}")

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        tg = import_textgrad(ws.work_dir / "textgrad-logs", self.name)
        from textgrad.autograd.function import BackwardContext
        from textgrad.autograd.llm_ops import LLMCall

        cfg = ws.config
        batch = ws.sampler.sample(ws.train_tasks, cfg.batch, iteration)
        rollouts = ws.rollouts(batch, memory, label="rollouts", iteration=iteration)
        batch_mean = sum(rollouts.scores) / len(rollouts.scores) if rollouts.scores else 0.0
        engine = self._engine(ws)
        initial = ws.store.load(ws.store.versions()[0])
        seed = seed_candidate(ws.program, initial)
        current = seed_candidate(ws.program, memory)
        params = {route: tg.Variable(current[route], requires_grad=True,
                                     role_description=f"instructions for the '{route}' step of an AI agent "
                                                      f"program (part of that step's system prompt)")
                  for route in ws.program.routes}
        chosen = sorted((r for r in rollouts.results if rollouts.traces.get(r.task_id) is not None),
                        key=lambda r: (r.score, r.task_id))[: self.max_traces]
        losses, graph_log = [], []
        for result in chosen:
            trace = rollouts.traces[result.task_id]
            replies: dict[str, Any] = {}
            for route, param in params.items():
                for call in trace.module_calls(route)[-self.steps_per_trace:]:
                    messages = call.get("messages") or []
                    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
                    user = clip(messages[-1]["content"] if messages else call.get("inputs", ""), self.max_chars,
                                squash=False)
                    prompt = tg.Variable(user, requires_grad=False, role_description=f"input to the '{route}' step")
                    reply = tg.Variable(str(call.get("output") or ""), predecessors=[param, prompt],
                                        role_description=f"reply of the '{route}' step")
                    reply.set_grad_fn(BackwardContext(backward_fn=LLMCall(engine, param).backward, response=reply,
                                                      prompt=user,
                                                      system_prompt=clip(system, self.max_chars, squash=False)))
                    replies[f"{route.replace('.', '_')}_{call['id']}"] = reply
            if not replies:
                continue
            verdict = f"score {result.score:.2f} (1.0 is perfect). {clip(result.feedback, 800, squash=False)}"
            loss_fn = tg.autograd.StringBasedFunction(
                lambda _v=verdict, **_kw: _v,
                function_purpose="the benchmark's evaluation of the agent's run on one task")
            losses.append(loss_fn(inputs=replies, response_role_description="evaluation of the agent's run"))
            graph_log.append({"task_id": result.task_id, "score": result.score, "nodes": list(replies)})
        ws.write(iteration, "textgrad_graph.json", {"traces": graph_log})
        if not losses:
            return Proposal(None, [], None, batch_mean, note="no trace to take a textual gradient from")
        total = tg.sum(losses) if len(losses) > 1 else losses[0]
        total.backward(engine)
        updated, skipped, gradients = {}, {}, {}
        for route, param in params.items():
            gradients[route] = [g.value for g in param.gradients]
            if not param.gradients:
                continue
            try:
                tg.TGD(parameters=[param], engine=engine).step()
                updated[route] = param.value
            except IndexError as exc:  # the optimizer LM did not wrap its answer in the required tags
                skipped[route] = clip(exc, 300, squash=False)
        candidate = {route: updated.get(route, current[route]) for route in params}
        ws.write(iteration, "textgrad.json", {"gradients": gradients, "updated": updated, "skipped": skipped,
                                              "engine": getattr(engine, "model_string", "")})
        new, ops, report = memory_from_candidate(memory, candidate, seed, source="textgrad", iteration=iteration,
                                                 initial=initial)
        if same_policy(new, memory, ws.program.routes):
            return Proposal(None, ops, report, batch_mean, note="the TGD step left every route text unchanged")
        new = new.model_copy(update={"version": 0, "parent": memory.version or None})
        return Proposal(new, ops, report, batch_mean, note=f"TGD step on {len(updated)} route(s)")
