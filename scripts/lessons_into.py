"""A control policy: another policy's lessons (its entries that are not worked examples) added to a base policy.

    python scripts/lessons_into.py --lessons-of policies/banking77-nlpg-fit-learned \
        --base policies/banking77-random133 --out policies/banking77-random133-learned [--examples-k 1]

To judge what a learned file's *examples* add when it also learned lessons, the control holds random examples and
the *same* lessons, word for word. ``--out`` gets the base's versions (copied as they are), then one version more:
the base's latest plus an ``add`` of each lesson (same route, text, condition and match), method ``control``, the
note naming the policy they came from. ``--examples-k`` also records how many examples each call is shown. The
lessons' own entries keep their provenance in the source policy; here they are stamped ``control``.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from nlgrad.methods.example_bank import held_examples, with_example_room
from nlgrad.policy import AddOp, EntryKind, PolicyBounds, PolicyStore, UpdateProvenance, apply_update


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lessons-of", required=True, type=Path)
    parser.add_argument("--base", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--examples-k", type=int)
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"--out {args.out} exists: choose a new directory")
    source = PolicyStore(args.lessons_of).load()
    ops = [AddOp(route=route, kind=e.kind, text=e.text, when=e.when, match=e.match or [],
                 reason=f"control: lesson copied from {args.lessons_of} ({e.id})")
           for route in source.routes() for e in source.active_entries(route) if e.kind != EntryKind.example]
    if not ops:
        parser.error(f"--lessons-of {args.lessons_of} holds no entry that is not an example")
    shutil.copytree(args.base, args.out)
    store = PolicyStore(args.out)
    base = store.load()
    if args.examples_k is not None and base.selection is not None:
        base = base.model_copy(update={"selection": base.selection.model_copy(update={"k": args.examples_k})})
    bounds = with_example_room(PolicyBounds(), held_examples(base), 0)
    memory, report = apply_update(base, ops, bounds, UpdateProvenance(source="control"))
    if len(report.applied) != len(ops):
        raise SystemExit(f"only {len(report.applied)} of {len(ops)} lessons fit the bounds: {report.summary()}")
    version = store.commit(memory, method="control", ops_count=len(ops),
                           note=f"+ the {len(ops)} lesson(s) of {args.lessons_of}")
    print(f"{args.out} version {version}: {len(ops)} lesson(s) of {args.lessons_of} added to {args.base}")


if __name__ == "__main__":
    main()
