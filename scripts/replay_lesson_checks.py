"""Re-check a JERP run's saved reflector rules and gate decisions against the current checks, without any LM call.

For every iteration folder with ``reflections.json``: which rules the reflector's ops added or edited, and which of
them :func:`nlgrad.methods.lesson_checks.lesson_problem` drops now (copied instance details, or a copied passage of
the failed trace, its feedback, a successful reference or the program's instructions; which reference the reflector
saw is not saved, so every success of the batch and every stored reference counts). For every ``gate.json``: the
decision the gate would take now (``--gate-min-wins``, default 2) on the same paired validation scores
(``val-candidate`` against the current version's ``val-vN``).

    .venv/bin/python scripts/replay_lesson_checks.py reports/ifeval/jerp/seed0/run [more run folders]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nlgrad.methods.lesson_checks import (lesson_problem, lesson_source, trace_text,
                                          workspace_instance_tokens)
from nlgrad.methods.run_artifacts import load_saved_run, load_traces
from nlgrad.runtime.rundir import RunDir
from nlgrad.methods.strategies.acceptance import PairedImprovementGate


def recheck_rules(folder: Path, ws, instructions: list[str]) -> list[str]:
    reflections = json.loads((folder / "reflections.json").read_text(encoding="utf-8"))
    results, traces = RunDir(folder / "rollouts").load_results(include_errors=True), load_traces(folder / "rollouts")
    specific = workspace_instance_tokens(ws, traces.values(), general_text=" ".join(instructions))
    # the successful reference shown to the reflector is not saved per op: use every success of this batch and
    # every stored reference (a superset of what it saw)
    refs = json.loads((folder.parent / "jerp_references.json").read_text(encoding="utf-8")) \
        if (folder.parent / "jerp_references.json").is_file() else {}
    successes = [t for tid, t in traces.items() if results.get(tid, {}).get("success")]
    shown = " ".join([*(trace_text(t, outputs=True) for t in successes),
                      *(" ".join([r.get("query", ""), *r.get("lines", [])]) for rs in refs.values() for r in rs)])
    lines = []
    for op in reflections.get("ops", []):
        if not op.get("text") or op.get("op") not in ("add", "edit", "merge"):
            continue
        task = (op.get("trace_ids") or [""])[0]
        source = lesson_source(traces.get(task), results.get(task, {}).get("feedback"), [shown, *instructions])
        problem = lesson_problem(op["text"], specific=specific, source=source)
        lines.append(f"  {'DROP' if problem else 'keep'} {op['op']} {op['text'][:90]!r}"
                     + (f": {problem[:120]}" if problem else ""))
    return lines


def recheck_gate(folder: Path, gate: PairedImprovementGate) -> str | None:
    saved_path = folder / "gate.json"
    if not saved_path.is_file():
        return None
    saved = json.loads(saved_path.read_text(encoding="utf-8"))
    candidate = RunDir(folder / "val-candidate").load_results(include_errors=True)
    current_dirs = sorted(p for p in folder.glob("val-v*") if p.is_dir())
    if not candidate or not current_dirs:
        return f"  gate: saved {'accept' if saved.get('accept') else 'reject'} ({saved.get('reason')}); no scores"
    current = RunDir(current_dirs[-1]).load_results(include_errors=True)
    ids = [t for t in candidate if t in current]
    now = gate.decide([candidate[t]["score"] for t in ids], [current[t]["score"] for t in ids])
    return (f"  gate: saved {'accept' if saved.get('accept') else 'reject'} ({saved.get('reason')}); "
            f"now {'accept' if now.accept else 'reject'} ({now.reason})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run folders (an optimize --out DIR's run/)")
    p.add_argument("--gate-min-wins", type=int, default=2)
    p.add_argument("--margin", type=float, default=0.02)
    args = p.parse_args()
    gate = PairedImprovementGate(margin=args.margin, min_wins=args.gate_min_wins)
    for run in map(Path, args.runs):
        saved = load_saved_run(run)
        ws, instructions = saved.workspace(), list(saved.instructions.values())
        print(run)
        for folder in saved.iterations():
            print(f" {folder.name}")
            if (folder / "reflections.json").is_file():
                print("\n".join(recheck_rules(folder, ws, instructions)) or "  (no rules proposed)")
            line = recheck_gate(folder, gate)
            if line:
                print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
