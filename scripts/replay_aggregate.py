"""Re-run NLPG's aggregation step on the saved artifacts of an optimize run, without any LM call: for every
iteration folder with ``proposals.json`` and ``feedback.json``, print which corrections reach ``--min-support`` when
support counts only the proposer's citations and when it also counts failed traces whose own feedback says the same
thing (``support_from_feedback``, NLPG's default since it was added). Candidates that restate their route's own
instructions are dropped as NLPG does now (the program is loaded from the run's ``config.json``).

    .venv/bin/python scripts/replay_aggregate.py policies/twx-arithmetic-nlpg/run [more run folders]
"""

from __future__ import annotations

import argparse
import sys

from nlgrad.methods.correction_similarity import contradiction_threshold, correction_similarity
from nlgrad.methods.nlpg.aggregate import aggregate, attribute_support
from nlgrad.methods.run_artifacts import load_saved_run, ops_summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run folders (an optimize --out DIR's run/)")
    p.add_argument("--min-support", type=int, default=2)
    p.add_argument("--similarity", default="auto", choices=["auto", "minilm", "lexical"])
    args = p.parse_args()
    similarity, threshold, backend = correction_similarity(args.similarity)
    contradiction = contradiction_threshold(backend)
    print(f"similarity {backend}, near-duplicate threshold {threshold}, min_support {args.min_support}")
    for run in args.runs:
        saved = load_saved_run(run)
        for folder, cands, records in saved.proposals():
            for label, cs in (("cited only", cands), ("with feedback", attribute_support(cands, records, similarity,
                                                                                        threshold))):
                ops, _ = aggregate(cs, min_support=args.min_support, similarity=similarity, dedupe_threshold=threshold,
                                   contradiction_threshold=contradiction, instructions=saved.instructions)
                print(f"{run} {folder.name} {len(cands)} candidates, {label}: {len(ops)} reach support: "
                      f"{ops_summary(ops)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
