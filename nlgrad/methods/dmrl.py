"""DMRL: document-mediated edits of a skill document, chosen by paired A/B tests and the DRPO advantage.

**Policy = skill document.** A route's document is its policy-memory entries of kind ``document_section``; each
entry's text is ``"## <Section title>\\n<body>"`` (the first line is the title, so ``when`` stays free and the
rendered policy reads as a markdown document). Entries without a ``## `` line (e.g. from ``--init-policy``) are
sections titled by their id. The frozen task agent reads the rendered route policy as usual.

One ``propose`` call:

1. roll out the train minibatch with the current document; collect the failures' evaluator feedback;
2. the **editor** (an :class:`EditorPolicy`, by default :class:`LMEditor` on the ``optimizer`` role) proposes
   ``group_size`` (G, default 8) atomic edits: location = section (and route), action = add / delete / replace,
   content; each becomes one bounded policy operation (invalid, trimmed, duplicate candidates and edits that copy
   names or numbers of single tasks, as in NLPG's aggregation, are dropped before any A/B rollout; an
   edit naming no known route goes to the program's last route, the one that produces the output); an edit names
   the failures it fixes (``cases``), and a new section's condition (``match``) is what separates those failures'
   inputs from the batch's others (:mod:`nlgrad.methods.conditions`, the same rule as NLPG's tag lessons), so the
   agent sees the section only on tasks like them;
3. each candidate document is **A/B-tested** by the frozen task agent against the unedited control on the same
   tasks and seeds (paired; the val tasks by default, ``ab_split="train"`` uses the minibatch) via
   ``ws.rollouts`` (resumable, cached);
4. candidates are ranked by the DRPO advantage (:mod:`nlgrad.methods.drpo`); the best is accepted only if its
   advantage is above ``advantage_margin`` **and** its paired A/B difference passes the same paired gate as NLPG
   (``ws.gate``: by default mean difference > ``--margin``, more wins than losses, at least ``--gate-min-wins``
   wins). The result is returned as the proposal's ``gate_decision`` so the shared loop does not re-gate; a
   rejected best edit is recorded in the store's rejected buffer (shown to the editor).

**Cost per iteration**: ``batch`` rollouts + ``ceil(G / editor_per_call)`` editor calls + ``(G' + 1) x n_ab``
rollouts (G' = distinct valid candidates, n_ab = ``--val`` tasks, or ``--batch`` with ``ab_split="train"``; the
control run is served from the LM cache when the document did not change). The shared gate is skipped. On TWX with
the local models keep ``G * n_ab`` small (e.g. ``group_size=4`` with ``--val 3 --step-cap 20``) to stay within 30
minutes; G = 8 is the issue's default.

**Editor-training hook.** Every tested candidate is appended to ``iter-NNNN/dmrl_edits.jsonl`` (one JSON object
per line, ``schema = "nlgrad.dmrl_edit/1"``): ``group`` (one group per iteration), ``prompt`` (the editor's chat
messages), ``completion`` (the edit as JSON), ``edit``, ``document`` (markdown before the edit), ``reward`` (R_i),
``control_reward`` (R_0), ``advantage`` (A_i) with its ``terms``, ``c_edit``, paired ``scores`` /
``control_scores``, ``task_ids``, ``accepted`` and ``status``. That is a GRPO/DRPO training group for the editor
(the task agent stays frozen); a trained editor plugs in as any object satisfying :class:`EditorPolicy`.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field, field_validator

from nlgrad.errors import LMCallError, StructuredOutputError
from nlgrad.lm.client import LM
from nlgrad.methods.base import Proposal, Workspace
from nlgrad.methods.conditions import lesson_condition, route_inputs
from nlgrad.methods.estimate import RunShape, loop_calls
from nlgrad.methods.drpo import DRPOParams, advantage_terms, edit_cost, edit_weight
from nlgrad.methods.lesson_checks import copied_instance_details, workspace_instance_tokens
from nlgrad.methods.prompts import method_module
from nlgrad.methods.rule_pool import is_placeholder, match_route
from nlgrad.policy import AddOp, DeleteOp, EditOp, EntryKind, PolicyMemory, UpdateProvenance, apply_update
from nlgrad.runtime.module import route_instructions
from nlgrad.text.embeddings import load_embedder, text_cosine

log = logging.getLogger(__name__)
EDIT_SCHEMA = "nlgrad.dmrl_edit/1"
_TITLE = re.compile(r"^##\s+(.+?)\s*$")


# ------------------------------------------------------------------------------------------------ the document
@dataclass
class Section:
    route: str
    entry_id: str
    title: str
    body: str
    protected: bool  # written by a human: editing it costs more (DRPO location weight)


def parse_section(text: str, fallback_title: str) -> tuple[str, str]:
    lines = text.split("\n")
    match = _TITLE.match(lines[0].strip())
    if match:
        return match.group(1).strip(), "\n".join(lines[1:]).strip()
    return fallback_title, text.strip()


def section_text(title: str, body: str) -> str:
    return f"## {' '.join(title.split())}\n{body.strip()}".strip()


def norm_title(title: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", title.lower()))


class SkillDocument:
    """The sections of each route's policy, read from a :class:`PolicyMemory` (which stays the source of truth)."""

    def __init__(self, memory: PolicyMemory, routes: list[str]):
        self.memory, self.routes = memory, list(routes)

    def sections(self, route: str) -> list[Section]:
        out = []
        for entry in self.memory.active_entries(route):
            title, body = parse_section(entry.text, entry.id or "Notes")
            out.append(Section(route, entry.id or "", title, body, entry.provenance.source == "human"))
        return out

    def find(self, route: str, title: str) -> Section | None:
        wanted = norm_title(title)
        return next((s for s in self.sections(route) if norm_title(s.title) == wanted), None)

    def markdown(self, route: str) -> str:
        return "\n\n".join(section_text(s.title, s.body) for s in self.sections(route))


# ------------------------------------------------------------------------------------------------ edits
class CandidateEdit(BaseModel):
    section: str = Field(min_length=1, max_length=80)
    action: Literal["add", "delete", "replace"]
    content: str = ""
    route: str | None = None
    cases: list[int] = Field(default_factory=list, description="the numbers of the listed failures the edit fixes")

    @field_validator("cases", mode="before")
    @classmethod
    def _cases(cls, value):
        values = value if isinstance(value, list) else [value] if value not in (None, "") else []
        return [int(v) for v in values if str(v).strip().isdigit()][:12]

    @field_validator("action", mode="before")
    @classmethod
    def _action(cls, value):
        value = str(value or "").strip().lower()
        return {"insert": "add", "append": "add", "remove": "delete", "edit": "replace", "rewrite": "replace",
                "update": "replace"}.get(value, value)

    @field_validator("section", "content", mode="before")
    @classmethod
    def _text(cls, value):
        return " ".join(str(value or "").replace("#", " ").split()) if value is not None else ""


class EditList(BaseModel):
    edits: list[CandidateEdit] = Field(default_factory=list)


@dataclass
class EditRequest:
    """What an editor sees: the current documents, recent failures, rejected edits, and the route instructions."""

    documents: list[dict[str, str]]
    failures: list[str]
    rejected: list[str]
    instructions: str
    iteration: int


@dataclass
class EditorSample:
    edit: CandidateEdit
    prompt: list[dict[str, str]] = field(default_factory=list)


class EditorPolicy(Protocol):
    """Contract: return up to ``n`` candidate edits for ``request`` (deterministic for a fixed editor state, so a
    resumed run proposes the same group). A trained editor (the companion trainer) implements this."""

    def propose(self, request: EditRequest, n: int) -> list[EditorSample]: ...


class LMEditor:
    """The frozen editor: ``ceil(n / per_call)`` structured calls; later calls see the edits already proposed and
    sample at ``temperature`` so the group is diverse even when the role's default temperature is 0."""

    def __init__(self, lm: LM, *, role: str = "optimizer", per_call: int = 4, temperature: float = 0.8,
                 max_tokens: int = 384):
        self.lm, self.role, self.per_call = lm, role, max(1, per_call)
        self.temperature, self.max_tokens = temperature, max_tokens
        self.module = method_module("dmrl_editor.j2", "dmrl.editor")
        self.skipped: list[dict[str, str]] = []

    def propose(self, request: EditRequest, n: int) -> list[EditorSample]:
        out: list[EditorSample] = []
        call = 0
        while len(out) < n and call < (n + self.per_call - 1) // self.per_call + 1:
            k = min(self.per_call, n - len(out))
            messages = self.module.render("", {
                "instructions": request.instructions, "documents": request.documents, "failures": request.failures,
                "rejected": request.rejected, "already": [describe_edit(s.edit) for s in out], "n": k})
            try:
                reply = self.lm.structured(self.role, messages, EditList, max_tokens=self.max_tokens,
                                           sample_index=call, temperature=self.temperature if call else None)
            except (StructuredOutputError, LMCallError) as exc:
                log.warning("dmrl editor call %d skipped: %s", call, exc)
                self.skipped.append({"call": str(call), "reason": str(exc)[:500]})
                reply = EditList()
            out += [EditorSample(edit, messages) for edit in reply.edits[:k]]
            call += 1
        return out[:n]


def describe_edit(edit: CandidateEdit) -> str:
    where = f"{edit.route}: " if edit.route else ""
    return f"{edit.action} [{where}{edit.section}] {edit.content}".strip()


def edit_to_op(doc: SkillDocument, edit: CandidateEdit, default_route: str,
               condition: Callable[[str, list[int]], list[str]] | None = None
               ) -> tuple[Any | None, str, str, bool, str]:
    """(policy op or None, old section body, new section body, protected, reason if invalid). A new section gets
    ``condition(route, edit.cases)`` as its ``match`` (the input patterns of the failures it names); an edited
    section keeps its own."""
    route = match_route(edit.route, doc.routes, default_route)
    section = doc.find(route, edit.section)
    reason = f"DMRL edit: {describe_edit(edit)}"
    if edit.action == "delete":
        if section is None:
            return None, "", "", False, f"no section {edit.section!r} to delete"
        return DeleteOp(id=section.entry_id, reason=reason), section.body, "", section.protected, ""
    if is_placeholder(edit.content) or len(edit.content) < 8 or len(edit.content.split()) < 3:
        return None, "", "", False, "an add/replace edit needs content (at least three words)"
    if section is None:
        match = condition(route, edit.cases) if condition is not None else []
        return (AddOp(route=route, text=section_text(edit.section, edit.content), kind=EntryKind.document_section,
                      match=match, reason=reason), "", edit.content, False, "")
    new_body = edit.content if edit.action == "replace" else f"{section.body}\n{edit.content}".strip()
    return (EditOp(id=section.entry_id, text=section_text(section.title, new_body), reason=reason),
            section.body, new_body, section.protected, "")


# ------------------------------------------------------------------------------------------------ the method
class DMRL:
    name = "dmrl"

    def __init__(self, *, group_size: int = 8, ab_split: Literal["val", "train"] = "val",
                 advantage_margin: float = 0.0, alpha: float = 0.5, delta: float = 0.1, lambda_edit: float = 0.1,
                 eta: float = 0.5, action_weights: dict[str, float] | None = None, protected_weight: float = 2.0,
                 embedder: str = "auto", editor_per_call: int = 4, editor_temperature: float = 0.8,
                 max_failures: int = 6, routes: list[str] | None = None, editor: EditorPolicy | str | None = None):
        if ab_split not in ("val", "train"):
            raise ValueError(f"ab_split must be val or train, got {ab_split!r}")
        self.group_size, self.ab_split, self.advantage_margin = max(1, group_size), ab_split, advantage_margin
        params = {"alpha": alpha, "delta": delta, "lambda_edit": lambda_edit, "eta": eta,
                  "protected_weight": protected_weight}
        if action_weights is not None:
            params["action_weights"] = action_weights
        self.params = DRPOParams(**params)
        self.embedder_kind, self.editor_per_call = embedder, editor_per_call
        self.editor_temperature = editor_temperature
        self.max_failures, self.routes, self.editor = max_failures, routes, editor

    @classmethod
    def estimate_calls(cls, options: dict[str, Any], shape: RunShape) -> dict[str, float]:
        """One iteration (the module docstring's cost): the batch's rollouts, ``ceil(G / editor_per_call)`` editor
        calls, and the A/B runs of at most G candidates plus the control on ``--val`` tasks (``ab_split="train"``:
        the batch, whose rollouts are the control); no shared gate."""
        group = max(1, options["group_size"])
        on_val = options["ab_split"] == "val"
        ab = (group + on_val) * (shape.val if on_val else shape.batch)
        return {**loop_calls(shape, gate=False), "agent (A/B: candidates and control)": shape.rollouts(ab),
                "optimizer": -(-group // max(1, options["editor_per_call"]))}

    def _editor(self, ws: Workspace) -> EditorPolicy:
        """The frozen LM editor by default; an EditorPolicy object; or ``"module:Factory"`` (called with the LM),
        which is how a trained editor is plugged in from the command line or a config file."""
        if self.editor is None:
            return LMEditor(ws.lm, per_call=self.editor_per_call, temperature=self.editor_temperature)
        if isinstance(self.editor, str):
            import importlib

            module, _, attr = self.editor.partition(":")
            self.editor = getattr(importlib.import_module(module), attr)(ws.lm)
        return self.editor

    def _cosine(self):
        embedder = load_embedder(self.embedder_kind)
        return lambda a, b: text_cosine(embedder, a, b)

    def propose(self, ws: Workspace, memory: PolicyMemory, iteration: int) -> Proposal:
        cfg = ws.config
        routes = [r for r in (self.routes or ws.program.routes)]
        doc = SkillDocument(memory, routes)
        batch = ws.sampler.sample(ws.train_tasks, cfg.batch, iteration)
        rollouts = ws.rollouts(batch, memory, label="rollouts", iteration=iteration)
        batch_mean = sum(rollouts.scores) / len(rollouts.scores) if rollouts.scores else 0.0
        failed = [r for r in sorted(rollouts.results, key=lambda r: (r.score, r.task_id))
                  if not r.success][: self.max_failures]
        failures = [r.feedback[:400] for r in failed]
        condition = _failure_condition(failed, rollouts)
        rejected = [op.get("reason", "")[len("DMRL edit: "):] for rej in ws.store.rejected() for op in rej.ops
                    if str(op.get("reason", "")).startswith("DMRL edit: ")][-6:]
        request = EditRequest(documents=[{"route": r, "markdown": doc.markdown(r)} for r in routes],
                              failures=failures, rejected=rejected, iteration=iteration,
                              instructions=" ".join(route_instructions(ws.program, r) for r in routes)[:600])
        editor = self._editor(ws)
        samples = editor.propose(request, self.group_size)

        specific = workspace_instance_tokens(ws, rollouts.traces.values(), results=rollouts.results,
                                             general_text=request.instructions)
        cosine = self._cosine()
        candidates, rows, seen = [], [], set()
        for i, sample in enumerate(samples):
            row = {"schema": EDIT_SCHEMA, "iteration": iteration, "group": f"iter-{iteration:04d}", "index": i,
                   "prompt": sample.prompt, "completion": sample.edit.model_dump_json(),
                   "edit": sample.edit.model_dump(),
                   "document": {r: doc.markdown(r) for r in routes}, "accepted": False}
            op, old, new, protected, why = edit_to_op(doc, sample.edit, routes[-1], condition)
            copied = copied_instance_details(f"{sample.edit.section} {sample.edit.content}", specific)
            if op is not None and copied:
                op, why = None, f"copies instance details: {', '.join(copied)}"
            if op is None:
                rows.append({**row, "status": "invalid", "reason": why})
                continue
            cand, report = apply_update(memory, [op], cfg.bounds,
                                        UpdateProvenance(source="dmrl", iteration=iteration))
            key = cand.to_json()
            if not report.applied or key in seen:
                rows.append({**row, "status": "duplicate" if key in seen else "trimmed",
                             "reason": "; ".join(t.reason for t in report.trimmed) or "same document as another"})
                continue
            seen.add(key)
            weight = edit_weight(sample.edit.action, protected=protected, params=self.params)
            c_edit = edit_cost(old, new, weight=weight, eta=self.params.eta, cosine=cosine)
            candidates.append((row, op, cand, report, c_edit))
        if not candidates:
            _write_rows(ws, iteration, rows)
            return Proposal(None, [], None, batch_mean, note="the editor proposed no usable edit")

        tasks = ws.val_tasks if self.ab_split == "val" else batch
        control = rollouts if self.ab_split == "train" else \
            ws.rollouts(tasks, memory, label=f"val-v{memory.version}", iteration=iteration, keep_traces=False)
        r0 = sum(control.scores) / len(control.scores) if control.scores else 0.0
        tested = []
        for n, (row, op, cand, report, c_edit) in enumerate(candidates):
            res = ws.rollouts(tasks, cand, label=f"ab-candidate-{n:02d}", iteration=iteration, keep_traces=False)
            reward = sum(res.scores) / len(res.scores) if res.scores else 0.0
            tested.append((row, op, cand, report, c_edit, res.scores, reward))
        terms = advantage_terms([t[6] for t in tested], r0, [t[4] for t in tested], self.params)
        best = max(range(len(tested)), key=lambda i: (terms[i]["advantage"], -tested[i][4], -i))
        row, op, cand, report, c_edit, scores, reward = tested[best]
        gate = ws.gate.decide(scores, control.scores)
        adv = terms[best]["advantage"]
        accept = gate.accept and adv > self.advantage_margin
        reason = gate.reason if not gate.accept else (
            f"{gate.reason}; DRPO advantage {adv:+.3f}" if accept
            else f"DRPO advantage {adv:+.3f} is not above {self.advantage_margin}")
        decision = replace(gate, accept=accept, reason=reason, details={
            **gate.details, "method": "dmrl", "best": best, "advantage": adv, "control_reward": r0,
            "ab_split": self.ab_split, "advantages": [t["advantage"] for t in terms],
            "candidates": [{"edit": t[0]["edit"], "reward": t[6], "c_edit": t[4], **terms[i]}
                           for i, t in enumerate(tested)]})
        for i, t in enumerate(tested):
            rows.append({**t[0], "status": "tested", "reward": t[6], "control_reward": r0,
                         "advantage": terms[i]["advantage"], "terms": terms[i], "c_edit": t[4],
                         "scores": t[5], "control_scores": control.scores, "task_ids": [x.id for x in tasks],
                         "accepted": accept and i == best})
        _write_rows(ws, iteration, rows)
        ws.write(iteration, "update.json", {"ops": [op.model_dump()], "report": report.model_dump(mode="json"),
                                            "decision": decision.to_dict()})
        return Proposal(cand, [op], report, batch_mean, gate_decision=decision,
                        note=f"best of {len(tested)} edits: {describe_edit(CandidateEdit(**row['edit']))}"[:300])


def _failure_condition(failed: list, rollouts) -> Callable[[str, list[int]], list[str]]:
    """``(route, case numbers) -> match``: what separates the named failures' inputs to ``route`` from the batch's
    other inputs to it (:func:`nlgrad.methods.conditions.lesson_condition`; fewer than two cases: unconditional)."""
    inputs = {r.task_id: route_inputs(rollouts.traces.get(r.task_id)) for r in rollouts.results}

    def condition(route: str, cases: list[int]) -> list[str]:
        named = {failed[c - 1].task_id for c in cases if 1 <= c <= len(failed)}
        source = [inputs[t].get(route, "") for t in sorted(named)]
        others = [v.get(route, "") for t, v in inputs.items() if t not in named and v.get(route)]
        return lesson_condition(source, others)

    return condition


def _write_rows(ws: Workspace, iteration: int, rows: list[dict[str, Any]]) -> None:
    """Rewritten whole each time (idempotent on resume): one JSON object per line."""
    from nlgrad.files import write_text_atomic

    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    write_text_atomic(ws.iteration_dir(iteration) / "dmrl_edits.jsonl", text)
