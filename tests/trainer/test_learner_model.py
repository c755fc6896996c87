"""Tiny learner model: offline tokenizer, left-padded scoring equals unpadded scoring, sampling stops, the LM adapter."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from nlgrad.trainer.batch import completion_logprobs, pad_batch  # noqa: E402
from nlgrad.trainer.hf_lm import LearnerLM  # noqa: E402
from nlgrad.trainer.learner_model import load_learner_model, tiny_tokenizer  # noqa: E402


def test_tiny_tokenizer_is_built_offline_and_round_trips():
    tok = tiny_tokenizer()
    text = "Possible actions:\n1. take coin\n2. move east — ünïcode"
    assert tok.decode(tok(text)["input_ids"]) == text
    assert len(tok(text)["input_ids"]) < len(text.encode())  # merges learned from the templates
    assert tiny_tokenizer().get_vocab() == tok.get_vocab()  # deterministic
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    assert chat.endswith("<|im_start|>assistant\n")


def test_padded_scoring_matches_unpadded(tiny_learner):
    model = tiny_learner.model.eval()
    pairs = [([5, 6, 7, 8, 9, 10], [11, 12]), ([20, 21], [22, 23, 24])]
    batch = pad_batch(pairs, tiny_learner.tokenizer.pad_token_id, torch.device("cpu"))
    assert batch.input_ids.shape == (2, 8) and batch.completion_mask.tolist() == [[0, 1, 1], [1, 1, 1]]
    with torch.no_grad():
        padded = completion_logprobs(model, batch)
        for i, (prompt, completion) in enumerate(pairs):
            ids = torch.tensor([prompt + completion])
            logits = model(input_ids=ids).logits[0, len(prompt) - 1:-1].float()
            expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(completion)[:, None]).squeeze(-1)
            got = padded[i, -len(completion):]
            assert torch.allclose(got, expected, atol=1e-4), (got, expected)
    with pytest.raises(ValueError):
        pad_batch([([1], [])], 0, torch.device("cpu"))


def test_sampling_respects_limits_and_greedy_is_deterministic(tiny_learner):
    prompt = tiny_learner.encode_chat([{"role": "user", "content": "Answer with one number."}])
    ids, text = tiny_learner.sample(prompt, max_new_tokens=5, temperature=1.0)
    assert 1 <= len(ids) <= 5
    a = tiny_learner.sample(prompt, max_new_tokens=5, temperature=0.0)
    b = tiny_learner.sample(prompt, max_new_tokens=5, temperature=0.0)
    assert a == b
    # a stop string cuts the text (not the sampled ids)
    ids, text = tiny_learner.sample(prompt, max_new_tokens=40, temperature=1.0, stop=["e"])
    assert "e" not in text


def test_learner_lm_records_sampled_turns_only_in_sample_mode(tiny_learner):
    lm = LearnerLM(tiny_learner, mode="sample", max_tokens_cap=3)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    completion = lm.complete("agent", messages, max_tokens=10)
    turns = lm.take_turns()
    assert len(turns) == 1 and turns[0].prompt_ids == tiny_learner.encode_chat(messages)
    assert len(turns[0].completion_ids) == completion.completion_tokens <= 3
    assert lm.take_turns() == [] and lm.ledger.total().calls == 1 and lm.model_for("agent") == "hf/learner"
    greedy = LearnerLM(tiny_learner, mode="greedy")
    greedy.complete("agent", messages, max_tokens=2)
    assert greedy.take_turns() == []


def test_lora_reference_is_the_base_model():
    learner = load_learner_model("tiny", device="cpu", lora=True, lora_rank=4, seed=0)
    trainable = [n for n, p in learner.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    batch = pad_batch([([5, 6, 7], [8, 9])], learner.tokenizer.pad_token_id, torch.device("cpu"))
    with torch.no_grad():
        for name, p in learner.model.named_parameters():
            if "lora_B" in name:
                p.add_(0.5)  # move the model away from the base
        moved = completion_logprobs(learner.model, batch)
        with learner.reference() as ref:
            base = completion_logprobs(ref, batch)
    assert not torch.allclose(moved, base)


def test_unknown_model_path_is_a_clear_error(tmp_path):
    from nlgrad.errors import ConfigError

    with pytest.raises(ConfigError, match="never downloads"):
        load_learner_model(str(tmp_path / "nope"), device="cpu")
    with pytest.raises(ConfigError, match="never downloads"):
        load_learner_model("HuggingFaceTB/SmolLM2-135M-Instruct", device="cpu")


def test_trainer_policy_is_a_deprecated_name_of_learner_model(tiny_learner):
    from nlgrad.trainer.loop import Trainer

    trainer = Trainer.__new__(Trainer)  # the alias only reads learner_model; no run is set up
    trainer.learner_model = tiny_learner
    with pytest.warns(DeprecationWarning, match="learner_model"):
        assert trainer.policy is tiny_learner
