"""Baseline methods for ``nlgrad compare`` (and ``nlgrad optimize --method ...``).

``none``, ``human`` and ``fixed`` (the policy file named by ``--method-option policy=PATH``) are static; ``gepa``,
``miprov2`` and ``textgrad`` run the real libraries on the route texts of the same program, through the same
executor, and store their result as policy memory (one ``rule`` entry per optimized route; see
:mod:`nlgrad.methods.baselines.common`). ``bootstrap_fewshot`` runs DSPy's BootstrapFewShotWithRandomSearch the same
way and stores the demos it selects as ``example`` entries (see :mod:`nlgrad.methods.baselines.dspy_demos`).
``random_examples`` and ``knn_fewshot`` write train examples shown per input (:mod:`nlgrad.methods.baselines.examples`).
Heavy
libraries are imported inside ``propose``.
"""

BASELINES: dict[str, str] = {
    "none": "nlgrad.methods.baselines.static:NoPolicy",
    "human": "nlgrad.methods.baselines.static:HumanPolicy",
    "fixed": "nlgrad.methods.baselines.static:FixedPolicy",
    "gepa": "nlgrad.methods.baselines.gepa_adapter:GEPA",
    "miprov2": "nlgrad.methods.baselines.miprov2:MIPROv2",
    "bootstrap_fewshot": "nlgrad.methods.baselines.bootstrap_fewshot:BootstrapFewShot",
    "textgrad": "nlgrad.methods.baselines.textgrad_method:TextGrad",
    "random_examples": "nlgrad.methods.baselines.examples:RandomExamples",
    "knn_fewshot": "nlgrad.methods.baselines.examples:KNNFewShot",
}
