"""NLPG (Natural-Language Policy Gradients) and its steps, one module each.

- :mod:`~nlgrad.methods.nlpg.method`: :class:`NLPG`, one iteration's steps in order (the method's ``propose``);
- the critic's diagnosis and the backward pass are credit, in :mod:`nlgrad.credit` (``NLPG(propagator=...)``);
- :mod:`~nlgrad.methods.nlpg.proposals`: per route, node feedback -> general corrections linked to their traces
  (:class:`~nlgrad.methods.nlpg.proposals.Candidate`, the pool every later step reads and writes);
- :mod:`~nlgrad.methods.nlpg.abstraction`: general lessons across a route's corrections (``abstract=True``);
- :mod:`~nlgrad.methods.nlpg.failure_groups` and :mod:`~nlgrad.methods.nlpg.tag_lessons`: failures grouped by the
  metric's tags, one lesson per group (``tag_groups=True``);
- :mod:`~nlgrad.methods.nlpg.confusion_examples` and :mod:`~nlgrad.methods.nlpg.nearest_fit`: worked examples from
  recurring confusions (``examples=N``); :mod:`~nlgrad.methods.nlpg.example_use`: one lesson per route on how to use
  its examples, from failed calls that were shown the right reply (``example_lessons=True``);
- :mod:`~nlgrad.methods.nlpg.aggregate`: support, near-duplicates, contradictions and copied details -> operations
  (LangMARL aggregates its lessons with it too).

The bound (:func:`nlgrad.policy.apply_update`) and the gate (:mod:`nlgrad.methods.strategies.acceptance`) are shared
by every method.
"""

from nlgrad.methods.nlpg.method import NLPG

__all__ = ["NLPG"]
