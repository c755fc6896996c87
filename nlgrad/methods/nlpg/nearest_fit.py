"""Nearest-example fit: choose the examples whose labels the agent will be shown nearest the inputs that need them.

A call is shown its ``k`` nearest examples, the nearest last, and the agent mostly replies the label of that last
one. Measured in the traces of banking77 x 1.5B with the 133 examples of ``policies/banking77-nlpg-same`` (first 103
test tasks; ``scripts/intent_trace_nearest.py`` reads such a run): 59 of 74 calls (80%) whose nearest example had
the right label replied right, 14 of 29 (48%) whose nearest example had another label. Over the committed policies,
test accuracy followed the share of test messages whose nearest example carries their label (``nn1``,
``scripts/intent_example_fit.py``): about ``0.48 + 0.32 * nn1`` (133 learned: nn1 0.67, accuracy 0.697; 133 random:
nn1 0.56, accuracy 0.660).

So the covering set is chosen for that share, by greedy forward selection on the train split (condensed
nearest-neighbour style): start from the examples the policy already holds (and the confusion examples added this
iteration), then repeatedly add the candidate train message that makes the most *probe* messages (a seeded sample of
train messages) have a nearest example of their own label, counting a probe it would take from a right nearest
example to a wrong one as a loss. A probe is never its own example (leave one out). It stops at the budget or when
no candidate gains. Embedding-only proxy on banking77 test[:1000] (MiniLM, 3,000 probes;
``scripts/intent_example_fit.py``): 133 random train messages nn1 0.49-0.56 (three draws and the committed one), the
133 centroid-prototype + confusion examples 0.67, the learned ``policies/banking77-nlpg-fit`` (60 confusion examples
topped up to 133 by this fit) 0.77, 133 chosen by the fit alone 0.77.

Pure numpy; nothing here imports the rest of nlgrad.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class FitPick:
    """One chosen candidate: its index, and how many probes it newly gave a nearest example of their label (net)."""

    index: int
    gain: int


def nearest_fit(probes: np.ndarray, probe_labels: np.ndarray, candidates: np.ndarray, candidate_labels: np.ndarray,
                budget: int, *, held: np.ndarray | None = None, held_labels: np.ndarray | None = None,
                probe_candidate: np.ndarray | None = None) -> list[FitPick]:
    """Greedy picks (at most ``budget``) among ``candidates`` (rows: L2-normalised vectors), best first.

    ``probes``/``probe_labels``: the messages the fit is judged on; ``held``/``held_labels``: examples already in
    the policy (their vectors and labels); ``probe_candidate[i]``: the candidate index that is probe ``i`` itself
    (-1 if none), so a probe is never its own nearest example. Labels are any comparable ids (ints or strings).
    """
    if budget <= 0 or len(candidates) == 0 or len(probes) == 0:
        return []
    sims = (probes @ candidates.T).astype(np.float32)
    if probe_candidate is not None:
        rows = np.nonzero(probe_candidate >= 0)[0]
        sims[rows, probe_candidate[rows]] = -np.inf
    match = np.asarray(probe_labels)[:, None] == np.asarray(candidate_labels)[None, :]
    best = np.full(len(probes), -np.inf, dtype=np.float32)
    right = np.zeros(len(probes), dtype=bool)
    if held is not None and len(held):
        held_sims = probes @ held.T
        nearest = held_sims.argmax(axis=1)
        best = held_sims[np.arange(len(probes)), nearest].astype(np.float32)
        right = np.asarray(held_labels)[nearest] == np.asarray(probe_labels)
    taken = np.zeros(len(candidates), dtype=bool)
    picks: list[FitPick] = []
    while len(picks) < budget:
        closer = sims > best[:, None]
        gain = (closer & match).sum(axis=0).astype(np.int64) - (closer & right[:, None]).sum(axis=0)
        gain[taken] = np.iinfo(np.int64).min
        choice = int(np.argmax(gain))
        if gain[choice] <= 0:
            break
        picks.append(FitPick(choice, int(gain[choice])))
        taken[choice] = True
        now = sims[:, choice] > best
        best = np.where(now, sims[:, choice], best)
        right = np.where(now, match[:, choice], right)
    return picks


def fit_share(probes: np.ndarray, probe_labels: np.ndarray, examples: np.ndarray, example_labels: np.ndarray) -> float:
    """The share of probes whose nearest example (by dot product) carries the probe's label."""
    if len(probes) == 0 or len(examples) == 0:
        return 0.0
    nearest = (probes @ examples.T).argmax(axis=1)
    return float((np.asarray(example_labels)[nearest] == np.asarray(probe_labels)).mean())
