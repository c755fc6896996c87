"""One self-contained ``report.html`` (jinja2; images embedded as base64 data URIs, no external resources).

- :func:`render_compare_report`: a comparison's table, its pictures, and the final policy of each method side by
  side;
- :func:`render_run_report`: one ``nlgrad optimize`` output (the learning curve, every iteration with its gate
  decision, rejected updates, and each version's policy with its diff from its parent).
"""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone
from importlib.resources import files
from pathlib import Path
from typing import Any

from nlgrad.compare.results import CompareResults
from nlgrad.errors import ConfigError


def _environment():
    import jinja2

    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True)


def _template():
    source = files("nlgrad.compare").joinpath("templates/report.html.j2").read_text(encoding="utf-8")
    return _environment().from_string(source)


def data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# ---- comparison -------------------------------------------------------------------------------------------------
def render_compare_report(results: CompareResults, out: Path, *, routes: list[str] | None = None,
                          name: str = "report.html") -> Path:
    from nlgrad.compare.table import format_row, headers

    out = Path(out)
    settings = results.settings
    images = [{"title": "Learning curves", "src": data_uri(out / "curves.png"),
               "caption": "Validation score after each iteration against the rollouts the method has used "
                          "(static baselines have none)."},
              {"title": "Test scores", "src": data_uri(out / "test_scores.png"),
               "caption": "Mean test score per method with its 95% bootstrap CI; the hatched bar is the "
                          "strongest baseline."}]
    methods = []
    for method in settings["methods"]:
        recs = [r for r in results.records if r.method == method]
        ok = [r for r in recs if r.ok]
        shown = ok[0] if ok else (recs[0] if recs else None)
        policy = shown.policy if shown else {}
        all_routes = list(dict.fromkeys((routes or []) + list(policy)))
        methods.append({"name": method, "status": shown.status if shown else "missing",
                        "reason": shown.reason if shown and not shown.ok else "",
                        "seed": shown.seed if shown else None,
                        "routes": [{"route": r, "text": policy.get(r, "")} for r in all_routes],
                        "others": [{"seed": r.seed, "routes": [{"route": k, "text": v} for k, v in r.policy.items()]}
                                   for r in ok[1:]]})
    context = {
        "kind": "compare", "title": f"nlgrad compare: {settings['benchmark']}", "generated": _now(),
        "settings": [(k, json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in settings.items()],
        "headers": headers(results.reference), "rows": [format_row(r) for r in results.rows],
        "reference": results.reference, "n_tasks": len(results.test_task_ids), "images": images,
        "methods": methods,
    }
    path = out / name
    path.write_text(_template().render(**context), encoding="utf-8")
    return path


# ---- one optimize run -------------------------------------------------------------------------------------------
def locate_run(path: Path) -> tuple[Path, Path]:
    """``(policy store dir, run work dir)`` from an optimize ``--out`` folder, its ``run/`` folder, or a
    comparison's ``<method>/seed<k>`` folder."""
    path = Path(path)
    candidates = [(path, path / "run"), (path.parent, path)]
    for store_dir, work_dir in candidates:
        if any(store_dir.glob("v[0-9]*.json")) and (work_dir / "state.json").exists():
            return store_dir, work_dir
    for store_dir, _ in candidates:
        if any(store_dir.glob("v[0-9]*.json")):
            return store_dir, store_dir / "run"
    raise ConfigError("not an optimize run or policy folder (no v0001.json ... found here or in its parent)",
                      field="RUN_OR_POLICY_DIR", value=str(path))


def _word_diff(ops: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"op": o["op"], "text": o["text"]} for o in ops if o.get("text")]


def _version_views(store) -> list[dict[str, Any]]:
    from nlgrad.policy import diff_memories

    views = []
    for version in store.versions():
        memory = store.load(version)
        parent = store.load(memory.parent) if memory.parent in store.versions() else None
        changes = []
        if parent is not None:
            diff = diff_memories(parent, memory)
            for route in diff.routes:
                for entry in route.added:
                    changes.append({"route": route.route, "kind": "added", "id": entry.id,
                                    "ops": [{"op": "insert", "text": entry.text}]})
                for entry in route.removed:
                    changes.append({"route": route.route, "kind": "removed", "id": entry.id,
                                    "ops": [{"op": "delete", "text": entry.text}]})
                for edit in route.edited:
                    changes.append({"route": route.route, "kind": "edited", "id": edit.id,
                                    "ops": _word_diff(edit.text_ops) or [{"op": "equal", "text": edit.new.text}]})
        views.append({"version": version, "parent": memory.parent, "method": memory.method,
                      "note": memory.note, "scores": memory.scores, "n_ops": memory.n_ops,
                      "created": str(memory.created or ""), "changes": changes,
                      "routes": [{"route": r, "text": memory.render(r)} for r in memory.routes()]})
    return views


def render_run_report(path: Path, out_file: Path | None = None) -> Path:
    """Render ``report.html`` for one optimize run (written next to the policy store unless ``out_file``)."""
    from nlgrad.compare.plots import plot_run_curve
    from nlgrad.compare.results import learning_curve, rollouts_by_iteration
    from nlgrad.policy import PolicyStore

    store_dir, work_dir = locate_run(path)
    store = PolicyStore(store_dir)
    state = json.loads((work_dir / "state.json").read_text(encoding="utf-8")) if (
        work_dir / "state.json").exists() else {"history": [], "ledger": {}}
    config = json.loads((work_dir / "config.json").read_text(encoding="utf-8")) if (
        work_dir / "config.json").exists() else {}
    per_iter = rollouts_by_iteration(work_dir) if work_dir.exists() else {}
    iterations, points, current = [], [], None
    for record in sorted(state.get("history", []), key=lambda r: r["iteration"]):
        gate = record.get("gate") or {}
        if gate and current is None:
            current = gate.get("current_mean")
            points.append({"iteration": 0, "current": current, "candidate": None, "accepted": False})
        if gate:
            current = gate["candidate_mean"] if record.get("accepted") else gate.get("current_mean")
        points.append({"iteration": record["iteration"], "current": current,
                       "candidate": gate.get("candidate_mean") if gate else None,
                       "accepted": bool(record.get("accepted"))})
        iterations.append({
            "iteration": record["iteration"], "rollouts": per_iter.get(record["iteration"], 0),
            "batch_mean": record.get("batch_mean"), "n_ops": record.get("n_ops", 0),
            "candidate": gate.get("candidate_mean"), "current": gate.get("current_mean"),
            "diff": gate.get("mean_diff"), "ci95": gate.get("ci95"),
            "decision": (f"accepted v{record['version']}" if record.get("accepted") else
                         ("rejected" if gate else "no candidate")),
            "reason": gate.get("reason") or record.get("note", "")})
    out_file = Path(out_file) if out_file else store_dir / "report.html"
    curve_png = out_file.parent / (out_file.stem + "-curve.png")
    plot_run_curve([p for p in points if p["current"] is not None], curve_png,
                   title=f"{config.get('method', '?')} on {config.get('benchmark', '?')}: validation score")
    rejected = [{"created": str(r.created), "reason": r.reason, "scores": r.scores,
                 "ops": [o.get("text") or json.dumps(o) for o in r.ops]} for r in store.rejected()]
    ledger = (state.get("ledger") or {}).get("total", {})
    context = {
        "kind": "run", "title": f"nlgrad optimize: {config.get('method', '?')} on {config.get('benchmark', '?')}",
        "generated": _now(), "settings": [(k, json.dumps(v) if isinstance(v, (dict, list)) else v)
                                          for k, v in config.items()],
        "images": [{"title": "Learning curve", "src": data_uri(curve_png),
                    "caption": "Validation score of the policy after each iteration; markers are the candidates "
                               "the gate accepted or rejected."}],
        "curve": learning_curve(work_dir) if work_dir.exists() else [],
        "iterations": iterations, "rejected": rejected,
        "accepted_count": sum(1 for it in iterations if it["decision"].startswith("accepted")),
        "versions": _version_views(store),
        "stop_reason": state.get("stop_reason"), "ledger": ledger,
        "test": _read_json(work_dir / "final" / "test.json"),
    }
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(_template().render(**context), encoding="utf-8")
    curve_png.unlink(missing_ok=True)  # embedded; the report stands alone
    return out_file


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
