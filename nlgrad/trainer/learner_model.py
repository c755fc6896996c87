"""The learner model (the model being trained): load it from disk (HF directory or GGUF), add LoRA, sample, score.

Weights never come from the network: loading runs with ``HF_HUB_OFFLINE=1`` and ``local_files_only=True``. A GGUF
file is dequantized once through transformers (``gguf_file=``, needs the ``gguf`` package) and the result is cached
as an HF directory under ``$NLGRAD_HOME/trainer/gguf/`` so later runs (and servers) load it directly.
``model="tiny"`` builds a randomly initialized 2-layer Llama with a small BPE tokenizer trained in memory on a fixed
prompt-like corpus: the CPU smoke tests and the GPU check's fallback use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import torch

from nlgrad.errors import ConfigError

CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
TINY_SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]
_EXTRA_EOS = ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>")


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """Forbid hub downloads for the duration of a load."""
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("CUDA was asked for but torch sees no GPU (or is a CPU build)", field="--device",
                          value=device)
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    if dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


# ---- tokenizers and models -------------------------------------------------------------------------------------
# A fixed corpus (not the live template files, which change): the tiny tokenizer, and so the tiny model's behaviour
# in tests, must not depend on what other prompts the project ships.
_TINY_CORPUS = (
    "You are an agent playing a text adventure game. Every turn you see what happened and a numbered list of the "
    "actions that are possible right now. Choose the one action that best moves you towards finishing the task. "
    "Prefer actions you have not tried yet in the current place; go through open doors and exits to rooms you have "
    "not visited. Reply with the number of the action only. Lessons learned from earlier games (follow them): "
    "Task: Find the coin. Once you find the coin, take it. You chose: Rooms visited: Step of Possible actions: "
    "(already tried here) Answer with one number. You are in the kitchen. In one part of the room you see a stove. "
    "There is also a fridge. To the North you see a closed wooden door. To the East you see the corridor. You move to "
    "the hallway. move east move west move north move south open door to north close door to south take coin "
    "inventory look around backyard living room bathroom bedroom pantry laundry room driveway street supermarket "
    "patio. Answer the question with a short answer, using the evidence when it helps. Question: Evidence: Answer: "
    "Write a search query for the question. Passages: The answer is a name, a date or a number."
) + "".join(f"\n{i}. {a}" for i, a in enumerate(
    ["move east", "take coin", "open door to north", "move west", "inventory", "look around", "move south",
     "close door to west", "move north", "open door to east", "take key", "put coin in box"] * 2, start=1))


def tiny_tokenizer(vocab_size: int = 512):
    """A small byte-level BPE tokenizer trained in memory on a fixed prompt-like corpus (deterministic, no file, no
    download): any text encodes (byte fallback), nlgrad's prompts come out ~2.5x shorter than raw bytes."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=TINY_SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator([_TINY_CORPUS], trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHATML_TEMPLATE
    return tok


def tiny_model(tokenizer, *, seed: int = 0, layers: int = 2, hidden: int = 64):
    """A randomly initialized Llama: the default (2 layers, hidden 64) trains for real on two CPU cores; larger
    shapes (``random:<hidden>x<layers>``) measure GPU throughput without any weights on disk."""
    from transformers import LlamaConfig, LlamaForCausalLM

    heads = max(4, hidden // 64)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=(hidden * 11 // 4) // 64 * 64
                         if hidden >= 256 else 2 * hidden, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=max(1, heads // 4) if hidden >= 256 else 2,
                         max_position_embeddings=16384, tie_word_embeddings=True,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(config)


def _random_shape(spec: str) -> tuple[int, int]:
    try:
        hidden, layers = spec.split(":", 1)[1].lower().split("x")
        return int(hidden), int(layers)
    except ValueError:
        raise ConfigError("a random model is written random:<hidden>x<layers>, e.g. random:1024x24",
                          field="--model", value=spec) from None


def _gguf_cache_dir(path: Path) -> Path:
    from nlgrad.config import default_cache_root

    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
    return default_cache_root() / "trainer" / "gguf" / f"{path.stem}-{key}"


def gguf_to_hf_dir(path: Path) -> Path:
    """Dequantize a GGUF file into an HF directory (model + tokenizer), once; returns the directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from nlgrad.files import file_lock

    target = _gguf_cache_dir(path)
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.with_name(target.name + ".lock")):
        if (target / "config.json").exists():
            return target
        try:
            import gguf  # noqa: F401
        except ImportError:
            raise ConfigError("loading a .gguf model needs the package gguf: pip install 'nlgrad[train]'",
                              field="--model", value=str(path)) from None
        with offline():
            tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
        # The weights are plain float32 now; drop the GGUF "quantizer" marker so the model saves as a normal one.
        model.hf_quantizer = None
        for holder in (model.config, getattr(model, "generation_config", None)):
            if holder is not None and hasattr(holder, "quantization_config"):
                delattr(holder, "quantization_config")
        model.is_quantized = False
        import shutil

        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        shutil.rmtree(target, ignore_errors=True)  # a partial directory from a crash
        os.replace(tmp, target)
    return target


def load_base(spec: str, *, dtype: torch.dtype, seed: int = 0):
    """(model, tokenizer, source description) for ``spec``: 'tiny', a .gguf file or an HF model directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if spec == "tiny" or spec.startswith("random:"):
        hidden, layers = (64, 2) if spec == "tiny" else _random_shape(spec)
        tok = tiny_tokenizer()
        model = tiny_model(tok, seed=seed, layers=layers, hidden=hidden).to(dtype)
        params = sum(p.numel() for p in model.parameters()) / 1e6
        return model, tok, f"random-init llama ({layers} layers, hidden {hidden}, {params:.1f}M params)"
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        directory, source = gguf_to_hf_dir(path), f"gguf {path} (dequantized)"
    elif path.is_dir() and (path / "config.json").exists():
        directory, source = path, f"hf {path}"
    else:
        raise ConfigError("the model must be an HF model directory (with config.json), a .gguf file, 'tiny' or "
                          "random:<hidden>x<layers>; "
                          "nlgrad never downloads weights", field="--model", value=spec)
    with offline():
        tok = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(directory), local_files_only=True, dtype=dtype)
    if tok.chat_template is None:
        tok.chat_template = CHATML_TEMPLATE
    return model, tok, source


def add_lora(model, *, rank: int, alpha: int, targets: list[str]):
    from peft import LoraConfig, get_peft_model

    names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    chosen = [t for t in targets if t in names] or "all-linear"
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=chosen, bias="none",
                        task_type="CAUSAL_LM")
    import warnings

    with warnings.catch_warnings():  # peft calls a transformers property deprecated in 5.x
        warnings.simplefilter("ignore", FutureWarning)
        return get_peft_model(model, config)


# ---- the bundle the trainer works with -------------------------------------------------------------------------
@dataclass
class LearnerModel:
    """The trainable model, its tokenizer and its frozen reference (LoRA: the base with adapters off)."""

    model: Any
    tokenizer: Any
    device: torch.device
    source: str
    lora: bool
    ref_model: Any = None
    eos_ids: set[int] = field(default_factory=set)
    last_entropy: float | None = None  # set by sample(): mean sampling entropy of the last completion

    def __post_init__(self) -> None:
        tok = self.tokenizer
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        ids = {tok.eos_token_id}
        gen = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids.update(gen if isinstance(gen, (list, tuple)) else [gen])
        vocab = tok.get_vocab()
        ids.update(vocab[t] for t in _EXTRA_EOS if t in vocab)
        self.eos_ids = {int(i) for i in ids if i is not None}

    def encode_chat(self, messages: list[dict[str, str]]) -> list[int]:
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode_text(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    @contextlib.contextmanager
    def reference(self) -> Iterator[Any]:
        """The frozen reference model (for KL and information gain)."""
        if self.lora:
            with self.model.disable_adapter():
                yield self.model
        else:
            if self.ref_model is None:
                raise RuntimeError("this learner model has no reference model (kl_coef=0 and not CIGPO)")
            yield self.ref_model

    @torch.no_grad()
    def sample(self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float,
               stop: list[str] | None = None) -> tuple[list[int], str]:
        """Sample (temperature > 0, pure softmax sampling) or decode greedily (temperature 0) one completion.

        Stops at an end-of-turn token or once the text contains a stop string. Returns the sampled token ids
        (what is trained) and the reply text cut before the first stop string (what the program sees). When
        sampling, ``self.last_entropy`` is set to the mean over the sampled tokens of the entropy of the
        distribution each was drawn from (``-sum p log p`` at ``temperature``; STAPO), else to None.
        """
        model = self.model
        cache_arg = _cache_argument(model)
        ids = torch.tensor([prompt_ids], device=self.device)
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        new: list[int] = []
        text = ""
        entropies: list[float] = []
        for _ in range(max_new_tokens):
            logits = out.logits[0, -1].float()
            if temperature <= 0:
                token = int(torch.argmax(logits))
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                token = int(torch.multinomial(probs, 1))
                entropies.append(float(-(probs * torch.log_softmax(logits / temperature, dim=-1)).sum()))
            new.append(token)
            if token in self.eos_ids:
                break
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            if stop and any(s in text for s in stop):
                break
            out = model(input_ids=torch.tensor([[token]], device=self.device), use_cache=True,
                        **{cache_arg: getattr(out, cache_arg)})
        self.last_entropy = sum(entropies) / len(entropies) if entropies else None
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        for s in stop or []:
            if s in text:
                text = text[:text.index(s)]
        return new, text


def _cache_argument(model) -> str:
    """transformers >= 5.2x names the KV cache ``cache`` (``past_key_values`` before, now deprecated)."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def load_learner_model(spec: str, *, device: str = "auto", dtype: str = "auto", lora: bool = True,
                       lora_rank: int = 16, lora_alpha: int = 32, lora_targets: list[str] | None = None,
                       need_reference: bool = True, gradient_checkpointing: bool = False,
                       seed: int = 0) -> LearnerModel:
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    model, tok, source = load_base(spec, dtype=torch_dtype, seed=seed)
    tok.padding_side = "left"
    model.to(dev)
    ref = None
    if lora:
        for p in model.parameters():
            p.requires_grad_(False)
        model = add_lora(model, rank=lora_rank, alpha=lora_alpha,
                         targets=lora_targets or ["q_proj", "k_proj", "v_proj", "o_proj"])
    elif need_reference:
        import copy

        ref = copy.deepcopy(model).eval()
        for p in ref.parameters():
            p.requires_grad_(False)
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if lora:
            model.enable_input_require_grads()
    model.config.use_cache = True
    return LearnerModel(model=model, tokenizer=tok, device=dev, source=source, lora=lora, ref_model=ref)
