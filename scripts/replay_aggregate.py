"""Re-run NLPG's aggregation step on the saved artifacts of an optimize run, without any LM call: for every
iteration folder with ``proposals.json`` and ``feedback.json``, print which corrections reach ``--min-support`` when
support counts only the proposer's citations and when it also counts failed traces whose own feedback says the same
thing (``support_from_feedback``, NLPG's default since it was added). Candidates that restate their route's own
instructions are dropped as NLPG does now (the program is loaded from the run's ``config.json``).

    .venv/bin/python scripts/replay_aggregate.py policies/twx-arithmetic-nlpg/run [more run folders]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nlgrad.credit.backward import NodeFeedbackRecord
from nlgrad.methods.aggregate import aggregate, attribute_support
from nlgrad.methods.embeddings import contradiction_threshold, correction_similarity
from nlgrad.methods.lesson_checks import route_instructions
from nlgrad.methods.proposals import Candidate
from nlgrad.runtime.registry import load_benchmark, load_program


def load_iteration(folder: Path) -> tuple[list[Candidate], list[NodeFeedbackRecord]] | None:
    if not (folder / "proposals.json").is_file() or not (folder / "feedback.json").is_file():
        return None
    cands = [Candidate(c["route"], c["text"], c.get("when"), list(c.get("trace_ids") or []), c.get("replaces"),
                       list(c.get("notes") or []))
             for c in json.loads((folder / "proposals.json").read_text())["candidates"]]
    records = [NodeFeedbackRecord(**r) for r in json.loads((folder / "feedback.json").read_text())]
    return cands, records


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
        config = json.loads((Path(run) / "config.json").read_text())
        benchmark = load_benchmark(config["benchmark"])
        program = load_program(config.get("program") or benchmark.default_program, benchmark)
        instructions = {route: route_instructions(program, route) for route in program.routes}
        for folder in sorted(Path(run).glob("iter-*")):
            loaded = load_iteration(folder)
            if loaded is None:
                continue
            cands, records = loaded
            for label, cs in (("cited only", cands), ("with feedback", attribute_support(cands, records, similarity,
                                                                                        threshold))):
                ops, _ = aggregate(cs, min_support=args.min_support, similarity=similarity, dedupe_threshold=threshold,
                                   contradiction_threshold=contradiction, instructions=instructions)
                kept = "; ".join(f"[{len(op.trace_ids)}] {op.text[:100]}" for op in ops) or "-"
                print(f"{run} {folder.name} {len(cands)} candidates, {label}: {len(ops)} reach support: {kept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
