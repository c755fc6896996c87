"""Re-run NLPG's aggregation on the saved proposals of optimize runs, with and without the abstraction step
(``--method-option abstract=true``): for every iteration, the optimizer LM reads that iteration's saved corrections
per route and proposes general lessons (one call per route), then aggregation runs as NLPG runs it (feedback support,
instance-detail and restatement checks). Prints the general lessons with the traces they cover and what reaches
``--min-support`` each way. It only re-runs step 4b-5: whether a lesson would pass the gate is not measured here.

    .venv/bin/python scripts/replay_abstraction.py /tmp/reports/twx-twc/nlpg/seed0/run [more run folders]
"""

from __future__ import annotations

import argparse
import sys

from nlgrad.config import load_settings
from nlgrad.lm.client import LM
from nlgrad.methods.correction_similarity import contradiction_threshold, correction_similarity
from nlgrad.methods.lesson_checks import workspace_instance_tokens
from nlgrad.methods.nlpg.abstraction import CorrectionAbstractor
from nlgrad.methods.nlpg.aggregate import aggregate, attribute_support
from nlgrad.methods.run_artifacts import load_saved_run, load_traces, ops_summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="NLPG run folders (an optimize --out DIR's run/)")
    p.add_argument("--min-support", type=int, default=2)
    args = p.parse_args()
    similarity, threshold, backend = correction_similarity("auto")
    contradiction = contradiction_threshold(backend)
    lm = LM(load_settings())
    for run in args.runs:
        saved = load_saved_run(run)
        instructions, ws = saved.instructions, saved.workspace()
        for folder, cands, records in saved.proposals():
            traces = load_traces(folder / "rollouts") if (folder / "rollouts/traces").is_dir() else {}
            specific = workspace_instance_tokens(ws, traces.values(), general_text=" ".join(instructions.values()))
            abstractor = CorrectionAbstractor(lm)
            general = [g for route in saved.program.routes
                       for g in abstractor.abstract(route, cands, instructions=instructions[route],
                                                    instance_specific=specific)]
            print(f"{run} {folder.name}: {len(cands)} candidates")
            for c in cands:
                print(f"  candidate [{c.support}] {c.text[:110]}")
            for g in general:
                print(f"  general   [{g.support}] {g.text[:110]}")
            for d in abstractor.dropped:
                print(f"  dropped   {d['text'][:90]!r}: {d['reason']}")
            for s in abstractor.skipped:
                print(f"  skipped   {s['route']}: {s['reason'][:120]}")
            for label, pool in (("without abstraction", cands), ("with abstraction", general + cands)):
                pool = attribute_support(pool, records, similarity, threshold)
                ops, _ = aggregate(pool, min_support=args.min_support, instance_specific=specific,
                                   similarity=similarity, dedupe_threshold=threshold,
                                   contradiction_threshold=contradiction, instructions=instructions)
                print(f"  {label}: {len(ops)} reach support: {ops_summary(ops)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
