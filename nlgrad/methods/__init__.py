"""Optimization methods: each proposes policy updates from rollouts; the shared loop gates and commits them.

``CATALOG`` maps the built-in ``--method`` names to ``module:Class`` (imported lazily); third-party packages add more
through the entry-point group ``nlgrad.methods`` (see :mod:`nlgrad.methods.registry` and ``README.md`` here). A
class is built with ``method_options`` as keyword args (``--method-option NAME=VALUE``; names and values are checked
against the constructor by :mod:`nlgrad.methods.options`). ``METHODS`` is the same dict under its older name.
"""

CATALOG: dict[str, str] = {
    "nlpg": "nlgrad.methods.nlpg:NLPG",
    "langmarl": "nlgrad.methods.langmarl:LangMARL",
    "langmarl_global": "nlgrad.methods.langmarl:LangMARLGlobal",
    "dmrl": "nlgrad.methods.dmrl:DMRL",
    "jerp": "nlgrad.methods.jerp:JERP",
    "none": "nlgrad.methods.baselines.static:NoPolicy",
    "human": "nlgrad.methods.baselines.static:HumanPolicy",
    "gepa": "nlgrad.methods.baselines.gepa_adapter:GEPA",
    "miprov2": "nlgrad.methods.baselines.miprov2:MIPROv2",
    "bootstrap_fewshot": "nlgrad.methods.baselines.bootstrap_fewshot:BootstrapFewShot",
    "textgrad": "nlgrad.methods.baselines.textgrad_method:TextGrad",
}
METHODS = CATALOG
