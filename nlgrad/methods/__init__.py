"""Optimization methods: each proposes policy updates from rollouts; the shared loop gates and commits them.

``CATALOG`` maps the built-in ``--method`` names to ``module:Class`` (imported lazily); third-party packages add more
through the entry-point group ``nlgrad.methods`` (see :mod:`nlgrad.methods.registry` and ``README.md`` here). A
class is built with ``method_options`` as keyword args (``--method-option NAME=VALUE``; names and values are checked
against the constructor by :mod:`nlgrad.methods.options`).
"""

from nlgrad.methods.baselines import BASELINES

CATALOG: dict[str, str] = {
    "nlpg": "nlgrad.methods.nlpg:NLPG",
    "langmarl": "nlgrad.methods.langmarl:LangMARL",
    "langmarl_global": "nlgrad.methods.langmarl:LangMARLGlobal",
    "dmrl": "nlgrad.methods.dmrl:DMRL",
    "jerp": "nlgrad.methods.jerp:JERP",
    **BASELINES,
}
COMPARE_DEFAULT = ("none", "human", "nlpg")  # nlgrad compare's --methods when none are given
