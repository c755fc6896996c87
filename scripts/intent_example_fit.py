"""How well a policy's worked examples cover a benchmark's test messages, measured with embeddings only (no LM).

    python scripts/intent_example_fit.py --benchmark banking77 --n 1000 \
        --policy policies/banking77-nlpg-fit --policy policies/banking77-random133 [--random 133 --draws 3] [--fit 133]

For each test message (the first ``--n`` of the test split) the script finds the examples a call would be shown (the
``--k`` most similar by the same MiniLM embedder the program uses) and prints, per example set:

- ``nn1``: the share of messages whose *nearest* example carries the message's own label. The agent mostly replies
  the label of the nearest example (banking77, 1.5B: see nlgrad/methods/nlpg/nearest_fit.py), so this share is what
  the nearest-example fit (``examples_cover=fit``) maximises on train probes;
- ``recall@k``: the share whose own label is among the ``k`` shown examples' labels.

``--random N --draws D`` adds D sets of N train messages drawn at random (seeds 0..D-1), the control a random-example
policy would be; ``--fit N`` adds N train messages chosen by the fit alone (no confusion examples); ``--plus
LABEL:N`` adds, for each policy, the same policy with its first N train messages of LABEL added (e.g. ``oos:100`` on
clinc150), and ``--label LABEL`` prints the measures on the test messages of that label alone as well. Train messages
only; the test messages are the ones scored, never chosen from.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nlgrad.methods.nlpg.confusion_examples import ConfusionExamples  # noqa: E402
from nlgrad.methods.nlpg.nearest_fit import fit_share, nearest_fit  # noqa: E402
from nlgrad.policy import PolicyMemory  # noqa: E402
from nlgrad.policy.examples import split_example  # noqa: E402
from nlgrad.runtime.registry import load_benchmark  # noqa: E402

def policy_examples(path: str) -> tuple[list[str], list[str]]:
    """(inputs, labels) of a policy's active example entries, every route."""
    memory = PolicyMemory.load(path)
    inputs, labels = [], []
    for route in memory.routes():
        for entry in memory.active_entries(route):
            if entry.kind != "example":
                continue
            pair = split_example(entry.text)
            if pair is None:
                raise SystemExit(f"{path}: entry {entry.id} is not 'Input: ...' / 'Output: ...': {entry.text[:80]!r}")
            inputs.append(pair[0].strip())
            labels.append(pair[1].strip())
    if not inputs:
        raise SystemExit(f"{path}: no active example entries")
    return inputs, labels


def recall_at(queries: np.ndarray, query_labels: np.ndarray, examples: np.ndarray, example_labels: np.ndarray,
              k: int) -> float:
    top = np.argsort(-(queries @ examples.T), axis=1)[:, :k]
    return float((example_labels[top] == query_labels[:, None]).any(axis=1).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--n", type=int, default=1000, help="first N test messages")
    parser.add_argument("--k", type=int, default=8, help="examples shown per call")
    parser.add_argument("--policy", action="append", default=[])
    parser.add_argument("--random", type=int, default=0, help="size of random train draws")
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--fit", type=int, default=0, help="size of a set chosen by the fit alone")
    parser.add_argument("--probes", type=int, default=3000, help="train probes the --fit set is judged on")
    parser.add_argument("--plus", action="append", default=[], metavar="LABEL:N",
                        help="each policy again with its first N train messages of LABEL added")
    parser.add_argument("--label", help="also the measures on the test messages of this label alone")
    args = parser.parse_args()

    bench = load_benchmark(args.benchmark)
    canon = bench.canonical
    vectors = ConfusionExamples(embedder="minilm").embed  # the learner's own normalised MiniLM vectors

    test = bench.tasks("test", args.n)
    queries = vectors([task.inputs["message"] for task in test])
    query_labels = np.asarray([canon(task.gold) for task in test], dtype=object)
    sets: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for path in args.policy:
        inputs, labels = policy_examples(path)
        sets[f"{path} ({len(inputs)})"] = (vectors(inputs), np.asarray([canon(x) for x in labels], dtype=object))
    train = bench.tasks("train") if (args.random or args.fit or args.plus) else []
    policies = list(sets.items())
    for spec in args.plus:
        label, _, count = spec.partition(":")
        extra = [task for task in train if canon(task.gold) == canon(label)][:int(count or 0)]
        if not extra:
            raise SystemExit(f"--plus {spec}: no train messages of label {label!r} (or N is 0)")
        for name, (examples, labels) in policies:
            sets[f"{name} + {len(extra)} train {canon(label)}"] = (
                np.vstack([examples, vectors([task.inputs["message"] for task in extra])]),
                np.concatenate([labels, np.asarray([canon(label)] * len(extra), dtype=object)]))
    if args.random or args.fit:
        train_vectors = vectors([task.inputs["message"] for task in train])
        train_labels = np.asarray([canon(task.gold) for task in train], dtype=object)
        for seed in range(args.draws if args.random else 0):
            rows = np.random.default_rng(seed).choice(len(train), size=args.random, replace=False)
            sets[f"random {args.random}, seed {seed}"] = (train_vectors[rows], train_labels[rows])
        if args.fit:
            probes = np.random.default_rng(0).choice(len(train), size=min(args.probes, len(train)), replace=False)
            picks = nearest_fit(train_vectors[probes], train_labels[probes], train_vectors, train_labels, args.fit,
                                probe_candidate=probes)
            rows = np.asarray([pick.index for pick in picks])
            sets[f"fit alone {len(rows)}"] = (train_vectors[rows], train_labels[rows])
    print(f"{args.benchmark} test[:{len(test)}], MiniLM, k={args.k}")
    only = query_labels == canon(args.label) if args.label else None
    head = f"{'example set':60s} {'nn1':>6s} {'recall@' + str(args.k):>9s}"
    if only is not None:
        head += f" {'nn1 ' + args.label:>12s} {'recall ' + args.label:>14s} {'nn1 others':>11s}"
        print(f"{int(only.sum())} test messages of {args.label}")
    print(head)
    for name, (examples, labels) in sets.items():
        line = (f"{name:60s} {fit_share(queries, query_labels, examples, labels):6.3f} "
                f"{recall_at(queries, query_labels, examples, labels, args.k):9.3f}")
        if only is not None:
            line += (f" {fit_share(queries[only], query_labels[only], examples, labels):12.3f}"
                     f" {recall_at(queries[only], query_labels[only], examples, labels, args.k):14.3f}"
                     f" {fit_share(queries[~only], query_labels[~only], examples, labels):11.3f}")
        print(line)


if __name__ == "__main__":
    main()
