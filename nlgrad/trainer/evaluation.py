"""Evaluate the learner model through nlgrad's own executor and program, so its rows compare with ``nlgrad eval``.

Two paths give the same numbers for the same weights and decoding (greedy, the agent role's temperature 0):
- in-process (this module): :class:`~nlgrad.trainer.hf_lm.LearnerLM` in greedy mode stands in for the LM; the
  executor, program, step cap, seeds, metric and run-directory format are nlgrad's;
- served: save the merged model (:func:`save_merged`), serve it with any OpenAI-compatible server and run
  ``nlgrad eval --lm openai/<name>`` with the server's ``api_base`` in a ``--config`` TOML (README).
The run directory gets nlgrad eval's files (config.json, results.jsonl, traces/, summary.json, ledger.json);
config.json carries ``"trainer"`` (method, checkpoint step, model source) so a comparison can label the row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from nlgrad.runtime.executor import RunResult
from nlgrad.runtime.protocols import step_cap_for
from nlgrad.runtime.ray_executor import executor_for
from nlgrad.runtime.registry import load_benchmark, load_program
from nlgrad.runtime.rundir import RunDir
from nlgrad.trainer.hf_lm import LearnerLM
from nlgrad.trainer.learner_model import LearnerModel


def evaluate_learner_model(learner_model: LearnerModel, *, benchmark: str, split: str = "dev", n: int = 20,
                           program: str | None = None, step_cap: int | None = None, run_dir: Path | None = None,
                           model_name: str = "hf/trained", trainer_info: dict[str, Any] | None = None,
                           max_tokens_cap: int | None = None, workers: int = 1, console: Console | None = None,
                           progress: bool = False, rule_hooks: dict[str, Any] | None = None) -> RunResult:
    """One ``nlgrad eval``-style run of ``learner_model`` (greedy) on ``n`` tasks of ``split``; ``rule_hooks``: the
    executor's rule pool and retrieval hook (:func:`~nlgrad.runtime.rule_retrieval.rule_pool_hooks`)."""
    bench = load_benchmark(benchmark)
    prog = load_program(program or bench.default_program, benchmark=bench)
    tasks = bench.tasks(split, n)
    cap = step_cap_for(bench, step_cap)
    lm = LearnerLM(learner_model, name=model_name, mode="greedy", max_tokens_cap=max_tokens_cap)
    rd = None
    if run_dir is not None:
        rd = RunDir(run_dir).create()
        rd.write_config({"command": "eval", "benchmark": bench.id, "split": split, "n": len(tasks),
                         "program": prog.name, "policy": None, "policy_version": None, "workers": workers,
                         "step_cap": cap, "timeout_s": None, "cache": False,
                         "roles": {"agent": {"model": model_name, "temperature": 0.0, "max_tokens": None}},
                         "trainer": trainer_info or {}})
    was_training = learner_model.model.training
    learner_model.model.eval()
    try:
        executor = executor_for(None, benchmark=bench, program=prog, lm=lm, workers=workers, step_cap=cap,
                                run_dir=rd, progress=progress, console=console,
                                label=f"eval {bench.id}/{split} ({model_name})", **(rule_hooks or {}))
        result = executor.run(tasks)
    finally:
        learner_model.model.train(was_training)
    if rd is not None:
        lm.ledger.save(rd.path / "ledger.json")
    return result


def save_merged(learner_model: LearnerModel, directory: Path) -> Path:
    """Save a standalone HF model directory (LoRA merged into a copy of the weights) plus the tokenizer."""
    import copy

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model = learner_model.model
    if learner_model.lora:
        model = copy.deepcopy(model).merge_and_unload()
    model.save_pretrained(directory)
    learner_model.tokenizer.save_pretrained(directory)
    return directory


def external_record(out_dir: Path, test_result: RunResult, *, model_dir: Path | None, note: str) -> dict[str, Any]:
    """The row ``nlgrad compare`` reads from ``<compare dir>/<method>/seed<k>/external.json``: test scores by task id
    (paired with the other methods' test tasks), training rollouts and LM-call tokens, wall time, and a learning
    curve of (cumulative rollouts, validation score — or the training batches' mean score without ``val_n``).
    Its ``policy`` field names the merged model directory ``model_dir`` (else ``out_dir``)."""
    import json

    curves = []
    path = Path(out_dir) / "curves.jsonl"
    if path.exists():
        curves = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rollouts, curve = 0, []
    for record in curves:
        rollouts += int(record.get("episodes", 0))
        curve.append([rollouts, float(record.get("val_score", record.get("score_mean", 0.0)))])
    uses_val = any("val_score" in r for r in curves)
    return {
        "test": {r.task_id: r.score for r in test_result.results},
        "success": {r.task_id: r.success for r in test_result.results},
        "rollouts": rollouts,
        "tokens": sum(int(r.get("prompt_tokens", 0)) + int(r.get("sampled_tokens", 0)) for r in curves),
        "usd": 0.0,
        "wall_s": round(sum(float(r.get("wall_s", 0.0)) for r in curves), 3),
        "policy": str(model_dir or out_dir),
        "curve": curve,
        "note": note + ("" if uses_val else " (curve: training-batch mean score; set --val-n/--val-every for dev)"),
    }
