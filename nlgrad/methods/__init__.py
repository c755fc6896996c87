"""Optimization methods: each proposes policy updates from rollouts; the shared loop gates and commits them.

``METHODS`` maps ``--method`` names to ``module:Class``; a class is built with ``method_options`` as keyword args
(``--method-option NAME=VALUE``; names and values are checked against the constructor by
:mod:`nlgrad.methods.options`).
"""

METHODS: dict[str, str] = {
    "nlpg": "nlgrad.methods.nlpg:NLPG",
    "langmarl": "nlgrad.methods.langmarl:LangMARL",
    "langmarl_global": "nlgrad.methods.langmarl:LangMARLGlobal",
    "dmrl": "nlgrad.methods.dmrl:DMRL",
    "jerp": "nlgrad.methods.jerp:JERP",
    "none": "nlgrad.methods.baselines.static:NoPolicy",
    "human": "nlgrad.methods.baselines.static:HumanPolicy",
    "gepa": "nlgrad.methods.baselines.gepa_adapter:GEPA",
    "miprov2": "nlgrad.methods.baselines.miprov2:MIPROv2",
    "textgrad": "nlgrad.methods.baselines.textgrad_method:TextGrad",
}
