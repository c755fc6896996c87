"""DSPy MIPROv2, instruction-only (``max_bootstrapped_demos=0, max_labeled_demos=0``), on a DSPy rendering of the
same program (:mod:`nlgrad.methods.baselines.dspy_render`).

MIPROv2 proposes ``num_candidates`` instructions per route with its grounded proposer (the ``optimizer`` role's
model through :class:`NlgradDspyLM`; program-aware proposing is off by default because the rendered module's
source is a bridge, not the program), then searches combinations with Optuna on minibatches of ``ws.val_tasks``.
It is not iterative and not resumable mid-search, so it runs once, in iteration 1, sized to the rollout budget:
with ``V`` validation tasks, minibatch ``m`` and a full evaluation every ``k`` trials it uses about
``2V + T*m + (T/k)*V`` rollouts, so ``T = (budget - 2V) / (m + V/k)`` trials (at least 1). The best program's
instructions become the policy (one ``rule`` entry per changed route); MIPROv2's choice (by its own full
validation score) is passed to the loop as the proposal's ``gate_decision``.
"""

from __future__ import annotations

from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.baselines.common import memory_from_candidate, require, same_policy, seed_candidate
from nlgrad.methods.strategies.acceptance import GateDecision
from nlgrad.policy import PolicyMemory


def plan_trials(budget: int | None, n_val: int, minibatch: int, full_eval_steps: int, default: int = 6) -> int:
    """How many Optuna trials fit the rollout budget (see the module docstring)."""
    if not budget:
        return default
    per_trial = minibatch + n_val / max(1, full_eval_steps)
    return max(1, int((budget - 2 * n_val) // per_trial))


class MIPROv2:
    name = "miprov2"
    reference = True  # nlgrad compare may take it as the reference row (the strongest baseline)
    one_shot = True  # nlgrad compare runs it for one iteration
    budget_option = "max_rollouts"  # compare passes its rollout budget as this option

    def __init__(self, *, max_rollouts: int | None = None, num_candidates: int = 3, num_trials: int | None = None,
                 minibatch_size: int | None = None, minibatch_full_eval_steps: int = 5, init_temperature: float = 1.0,
                 program_aware: bool = False, data_aware: bool = True, tip_aware: bool = True,
                 view_data_batch_size: int = 5, train_examples: int = 20):
        self.max_rollouts, self.num_candidates, self.num_trials = max_rollouts, num_candidates, num_trials
        self.minibatch_size, self.full_eval_steps = minibatch_size, minibatch_full_eval_steps
        self.init_temperature, self.program_aware, self.data_aware = init_temperature, program_aware, data_aware
        self.tip_aware, self.view_data_batch_size, self.train_examples = tip_aware, view_data_batch_size, \
            train_examples

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        if iteration > 1:
            return Proposal(None, note="MIPROv2 runs once, in iteration 1")
        dspy = require("dspy", "dspy", self.name)
        require("optuna", "optuna", self.name)  # MIPROv2's search (dspy[optuna])
        from nlgrad.methods.baselines.dspy_render import make_dspy_lm, render_program, score_metric, to_examples

        seed = seed_candidate(ws.program, memory)
        counter = {"rollouts": 0}

        def count(n: int) -> None:
            counter["rollouts"] += n

        student, route_map = render_program(ws, base=memory, seed=seed, iteration=iteration, on_rollout=count)
        n_val = len(ws.val_tasks)
        minibatch = min(self.minibatch_size or ws.config.batch, n_val)
        trials = self.num_trials or plan_trials(self.max_rollouts, n_val, minibatch, self.full_eval_steps)
        train = ws.sampler.sample(ws.train_tasks, min(self.train_examples, len(ws.train_tasks)), iteration)
        optimizer = dspy.MIPROv2(metric=score_metric, prompt_model=make_dspy_lm(ws.lm, "optimizer"),
                                 task_model=make_dspy_lm(ws.lm, "agent"), max_bootstrapped_demos=0,
                                 max_labeled_demos=0, auto=None, num_candidates=self.num_candidates,
                                 num_threads=ws.config.workers, seed=ws.config.seed,
                                 init_temperature=self.init_temperature, verbose=False,
                                 log_dir=str(ws.iteration_dir(iteration) / "mipro"))
        best = optimizer.compile(student, trainset=to_examples(train), valset=to_examples(ws.val_tasks),
                                 num_trials=trials, minibatch=minibatch < n_val, minibatch_size=minibatch,
                                 minibatch_full_eval_steps=self.full_eval_steps,
                                 program_aware_proposer=self.program_aware, data_aware_proposer=self.data_aware,
                                 tip_aware_proposer=self.tip_aware, fewshot_aware_proposer=False,
                                 view_data_batch_size=self.view_data_batch_size)
        best_candidate = best.candidate()
        logs = getattr(best, "trial_logs", {}) or {}
        default_score = float((logs.get(1) or {}).get("full_eval_score", 0.0)) / _scale(logs)
        best_score = float(getattr(best, "score", 0.0) or 0.0) / _scale(logs)
        candidates = [{"score": c.get("score"), "instructions": c["program"].candidate()}
                      for c in getattr(best, "candidate_programs", []) or [] if hasattr(c.get("program"), "candidate")]
        ws.write(iteration, "miprov2.json", {
            "trials": trials, "minibatch_size": minibatch, "num_candidates": self.num_candidates,
            "rollouts": counter["rollouts"], "default_score": default_score, "best_score": best_score,
            "best": best_candidate, "seed": seed, "route_map": route_map, "candidates": candidates})
        candidate, ops, report = memory_from_candidate(memory, best_candidate, seed, source="miprov2",
                                                       iteration=iteration)
        if same_policy(candidate, memory, ws.program.routes):
            return Proposal(None, [], None, best_score, note="MIPROv2 kept the starting instructions")
        decision = GateDecision.self_selected(best_score, default_score, f"MIPROv2's own selection after {trials} "
                                                                         f"trials (best full validation score)")
        candidate = candidate.model_copy(update={"version": 0, "parent": memory.version or None})
        return Proposal(candidate, ops, report, best_score, note=f"MIPROv2 best of {trials} trials",
                        gate_decision=decision)


def _scale(logs: dict) -> float:
    """DSPy's Evaluate reports scores in percent (0-100) in some versions; normalise to [0, 1]."""
    values = [v.get("full_eval_score") for v in logs.values() if isinstance(v, dict) and v.get("full_eval_score")]
    return 100.0 if any(float(v) > 1.0 for v in values) else 1.0
