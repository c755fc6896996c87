"""The companion trainer: the *weight* side of "improve a frozen agent with language vs. train the weights".

It trains a local HF model (the *learner model*; "policy" in nlgrad always means policy memory) with group-relative
reinforcement learning (GRPO, GiGPO, ProGPO, CIGPO, ...) on the same benchmarks, programs, seeds and evaluation as
nlgrad's language-space methods (see README.md in this folder). Needs the optional extra ``train`` (torch,
transformers, peft, gguf); nothing here imports torch until it is used, and ``nlgrad.trainer.advantages`` needs no
torch at all.
"""

from nlgrad.trainer.config import METHODS, TrainConfig

__all__ = ["METHODS", "TrainConfig"]
