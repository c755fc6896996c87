"""NLPG's worked examples: recurring confusions become contrastive example entries, under a bound.

For a program that says what each route should have replied (``reference_outputs``, see
:mod:`nlgrad.methods.example_bank`), a failed rollout is a *confusion* at its first route whose reply differs from
the reference: (route, expected reply, what it replied). Confusions are grouped by (route, expected reply): a label
the agent keeps missing, whatever it answers instead. One iteration:

0. Coverage (``cover``, on by default): every reply of every route that no example of the policy shows yet gets
   one example, the train message most typical of that reply and least like any other (nearest its own reply's
   centroid, farthest from the nearest other centroid). Shown
   only the k examples nearest its input, a call of a label that the policy has no example of is pulled towards the
   labels it does show (measured on banking77 x 1.5B: 56 confusion examples alone, +0.055 on 200 dev tasks, where
   154 random examples gain about +0.25), so the confusion examples are added on top of a covering set.
   With ``cover="fit"`` the covering set comes last instead: after the confusion examples, the route is filled up to
   its bound by the nearest-example fit (:mod:`~nlgrad.methods.nlpg.nearest_fit`), the train messages that give the
   most sampled train messages a nearest example of their own label, given the examples already chosen.

1. Confusions are counted over every rollout this run has made so far (``confusions.json`` of each iteration), so
   a confusion that recurs across batches reaches ``min_support`` distinct tasks.
2. Each confusion with enough support that the policy does not already answer (its failed messages are not yet
   examples) yields two entries, most supported first, at most ``per_iteration`` confusions: the failed message
   that is most typical of the group (nearest the others) with its right reply, and, next to it, the failed label's
   own train message nearest that failed message (``partner="same"``, the default): two examples of the right label
   where the agent went wrong, none of the wrong one. With ``partner="confused"`` the second entry is instead the
   train message of the label it was most often confused with that is nearest the failed message, with *that* label,
   to show where the boundary between the two labels runs; measured on banking77 x 1.5B (300 test tasks) such a
   partner pulled the agent its way on 7.3% of the calls it was shown to, a coverage example on 3.4%, and the
   ``same`` policy scored +0.033 [-0.010, +0.080] over the ``confused`` one (won 26, lost 16).
3. Credit for what is already there: a call that was shown an example whose reply is the call's wrong reply
   downvotes it (it pulled the agent the wrong way); a call answered right upvotes the shown examples whose reply
   was the right one. Utility (helpful - harmful) orders eviction when the bound is reached.

Everything is applied by :func:`nlgrad.policy.apply_update` under the example bound, and gated by the shared paired
gate like every NLPG update. ``confusions.json`` and ``examples.json`` record why each example appeared.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from nlgrad.methods.base import Workspace, guard_not_test
from nlgrad.methods.example_bank import reference_outputs, route_input
from nlgrad.methods.nlpg.nearest_fit import nearest_fit
from nlgrad.policy import AddOp, DownvoteOp, EntryKind, PolicyMemory, UpvoteOp
from nlgrad.policy.example_selection import example_input
from nlgrad.policy.examples import format_example, split_example
from nlgrad.runtime.executor import RunResult
from nlgrad.runtime.protocols import Task

PARTNERS = ("confused", "same")  # what stands next to a failed message: see ConfusionExamples._partner
COVERS = ("centroid", "fit", "none")  # how the covering examples are chosen: see ConfusionExamples.__init__
PROTOTYPE_POOL = 40  # train tasks per reply whose centroid chooses the coverage example
FIT_PROBES = 3000  # train messages (a seeded sample) that the nearest-example fit is judged on


def cover_mode(cover: bool | str) -> str | None:
    """The covering mode ``cover`` names (True: ``centroid``, False: ``none``), or None when it names none of COVERS."""
    if isinstance(cover, bool):
        return "centroid" if cover else "none"
    return cover if cover in COVERS else None


def reply_of(parsed: Any) -> str:
    """A route call's reply as a label: a dict's ``label``, else the text."""
    if isinstance(parsed, dict):
        return str(parsed.get("label") or "")
    return str(parsed or "")


def same_key(text: str) -> str:
    return text.strip().lower()


def same(a: str, b: str) -> bool:
    return same_key(a) == same_key(b)


@dataclass
class Confusion:
    """The failures of one route on one expected reply, and what the agent replied instead (``got``: the most
    frequent wrong reply, ties alphabetical)."""

    route: str
    expected: str
    task_ids: list[str] = field(default_factory=list)
    replies: Counter = field(default_factory=Counter)

    @property
    def key(self) -> str:
        return f"{self.route}|{self.expected}"

    @property
    def got(self) -> str:
        return sorted(self.replies.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]

    @property
    def support(self) -> int:
        return len(set(self.task_ids))


def first_wrong_calls(program, rollouts: RunResult, tasks: dict[str, Task]) -> Iterator[tuple[str, dict, str, str]]:
    """``(task_id, call, expected, got)`` for each failed rollout of a known task, at its first call whose route
    replied otherwise than the task's reference output."""
    for result in rollouts.results:
        trace = rollouts.traces.get(result.task_id)
        if result.error or result.success or trace is None or result.task_id not in tasks:
            continue
        refs = reference_outputs(program, tasks[result.task_id])
        for call in trace.module_calls():
            route, got = call["route"], reply_of(call.get("parsed"))
            if route in refs and not same(got, str(refs[route])):
                yield result.task_id, call, str(refs[route]), got
                break


def batch_confusions(program, rollouts: RunResult, tasks: dict[str, Task]) -> list[dict[str, str]]:
    """``{"task_id", "route", "expected", "got"}`` for each failed rollout, at its first route that replied wrong."""
    return [{"task_id": task_id, "route": call["route"], "expected": expected, "got": got}
            for task_id, call, expected, got in first_wrong_calls(program, rollouts, tasks)]


def credit_votes(program, memory: PolicyMemory, rollouts: RunResult, tasks: dict[str, Task]) -> list[Any]:
    """Up- and downvotes for the examples the batch's calls were shown (step 3 of the module docstring)."""
    replies = {e.id: (split_example(e.text) or ("", ""))[1] for r in memory.routes() for e in memory.active_entries(r)
               if e.kind == EntryKind.example}
    helpful, harmful = Counter(), Counter()
    for result in rollouts.results:
        trace = rollouts.traces.get(result.task_id)
        if result.error or trace is None or result.task_id not in tasks:
            continue
        refs = reference_outputs(program, tasks[result.task_id])
        for call in trace.module_calls():
            expected = refs.get(call["route"])
            if expected is None:
                continue
            got = reply_of(call.get("parsed"))
            for entry_id in call.get("policy_entries") or []:
                if entry_id not in replies:
                    continue
                if same(got, str(expected)) and same(replies[entry_id], str(expected)):
                    helpful[entry_id] += 1
                elif not same(got, str(expected)) and same(replies[entry_id], got):
                    harmful[entry_id] += 1
    return ([UpvoteOp(id=i, amount=min(n, 1000), reason="shown to calls that replied its label rightly")
             for i, n in sorted(helpful.items())] +
            [DownvoteOp(id=i, amount=min(n, 1000), reason="shown to calls that replied its label wrongly")
             for i, n in sorted(harmful.items())])


class ConfusionExamples:
    """Proposes contrastive example entries from recurring confusions (see the module docstring)."""

    def __init__(self, *, per_iteration: int = 12, embedder: str = "auto", cover: bool | str = True,
                 partner: str = "same", bound: int | None = None):
        """``cover``: ``"centroid"`` (or True) adds one prototype per reply before the confusions (step 0);
        ``"fit"`` adds the confusions first, then fills the route up to ``bound`` examples by the nearest-example
        fit (:mod:`~nlgrad.methods.nlpg.nearest_fit`); ``"none"`` (or False) adds only confusion examples."""
        self.cover = cover_mode(cover)
        if self.cover is None:
            raise ValueError(f"cover must be one of {', '.join(COVERS)}, got {cover!r}")
        if self.cover == "fit" and not bound:
            raise ValueError("cover='fit' needs the example bound it fills up to")
        self.per_iteration, self.partner, self.bound = per_iteration, partner, bound
        self.embedder_kind = embedder
        self._train: list[tuple[Task, dict[str, Any]]] | None = None

    def embed(self, texts: list[str]) -> np.ndarray:
        from nlgrad.text.embeddings import load_embedder

        vectors = np.asarray(load_embedder(self.embedder_kind).embed(texts), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)

    def train_references(self, ws: Workspace) -> list[tuple[Task, dict[str, Any]]]:
        if self._train is None:
            self._train = [(t, reference_outputs(ws.program, t)) for t in guard_not_test(ws.train_tasks)]
        return self._train

    def confusions(self, ws: Workspace, iteration: int, rollouts: RunResult) -> list[Confusion]:
        """This batch's confusions (written to ``confusions.json``) joined with every earlier iteration's."""
        tasks = {t.id: t for t in ws.train_tasks}
        ws.write(iteration, "confusions.json", batch_confusions(ws.program, rollouts, tasks))
        groups: dict[str, Confusion] = {}
        for it in range(iteration + 1):
            path = ws.work_dir / f"iter-{it:04d}" / "confusions.json"
            if not path.exists():
                continue
            for row in json.loads(path.read_text(encoding="utf-8")):
                c = Confusion(row["route"], row["expected"])
                group = groups.setdefault(c.key, c)
                if row["task_id"] not in group.task_ids:
                    group.task_ids.append(row["task_id"])
                    group.replies[row["got"]] += 1
        return sorted(groups.values(), key=lambda c: (-c.support, c.key))

    def ops(self, ws: Workspace, memory: PolicyMemory, iteration: int, rollouts: RunResult,
            min_support: int) -> tuple[list[Any], list[dict[str, Any]]]:
        """The votes and the adds of one iteration, and a record of each added pair."""
        tasks = {t.id: t for t in guard_not_test(ws.train_tasks)}
        shown = {example_input(e) for r in memory.routes() for e in memory.active_entries(r)
                 if e.kind == EntryKind.example}
        ops: list[Any] = credit_votes(ws.program, memory, rollouts, tasks)
        record: list[dict[str, Any]] = []
        taken: set[str] = set()
        if self.cover == "centroid":
            for route, output, task in self.prototypes(ws, memory):
                taken.add(_input_text(task))
                ops.append(AddOp(route=route, kind=EntryKind.example, text=format_example(route_input(task), output),
                                 trace_ids=[task.id],
                                 reason=f"coverage: the most typical, most distinctive train message of {output}"))
                record.append({"route": route, "prototype": output, "task": task.id})
        pairs = 0
        for confusion in self.confusions(ws, iteration, rollouts):
            if pairs >= self.per_iteration or confusion.support < min_support:
                break
            failed = [tasks[i] for i in confusion.task_ids if i in tasks]
            messages = [_input_text(t) for t in failed]
            if any(m in shown or m in taken for m in messages):
                continue  # the policy already holds one of these failures: its example did not settle it yet
            anchor = failed[self._medoid(messages)]
            partner = self._partner(ws, confusion, _input_text(anchor), shown | taken)
            partner_label = confusion.got if self.partner == "confused" else confusion.expected
            pair = [(anchor, confusion.expected)] + ([(partner, partner_label)] if partner is not None else [])
            for task, output in pair:
                taken.add(_input_text(task))
                ops.append(AddOp(route=confusion.route, kind=EntryKind.example,
                                 text=format_example(route_input(task), output), trace_ids=[task.id],
                                 reason=f"confusion {confusion.expected} -> {confusion.got} "
                                        f"(support {confusion.support})"))
            pairs += 1
            record.append({"route": confusion.route, "expected": confusion.expected, "got": confusion.got,
                           "replies": dict(confusion.replies), "support": confusion.support,
                           "failed": anchor.id, "partner": partner.id if partner is not None else None})
        if self.cover == "fit":
            adds = [op for op in ops if isinstance(op, AddOp)]
            for route, task, gain, output in self.fitted(ws, memory, adds, iteration):
                ops.append(AddOp(route=route, kind=EntryKind.example, text=format_example(route_input(task), output),
                                 trace_ids=[task.id], reason=f"coverage: the nearest example of its label for {gain} "
                                                             f"more sampled train messages"))
                record.append({"route": route, "fit": output, "task": task.id, "gain": gain})
        return ops, record

    def fitted(self, ws: Workspace, memory: PolicyMemory, adds: list[AddOp],
               iteration: int) -> list[tuple[str, Task, int, str]]:
        """``(route, task, gain, reply)`` for each train message the nearest-example fit adds to a route, up to the
        bound, given the route's active examples and this iteration's ``adds``."""
        train = self.train_references(ws)
        texts = [_input_text(t) for t, _ in train]
        vectors = self.embed(texts)
        rng = np.random.default_rng(iteration)
        probe_rows = np.sort(rng.choice(len(train), min(FIT_PROBES, len(train)), replace=False))
        out = []
        for route in sorted({r for _, refs in train for r in refs}):
            held = [split_example(e.text) for e in memory.active_entries(route) if e.kind == EntryKind.example]
            held += [split_example(op.text) for op in adds if op.route == route]
            held = [pair for pair in held if pair]
            room = self.bound - len(held)
            if room <= 0:
                continue
            labels = np.array([same_key(str(refs.get(route, ""))) for _, refs in train])
            held_texts = {text for text, _ in held}
            free = np.array([route in refs and text not in held_texts for text, (_, refs) in zip(texts, train)])
            rows = np.nonzero(free)[0]
            position = np.full(len(train), -1)
            position[rows] = np.arange(len(rows))
            probes = probe_rows[np.array([route in train[i][1] for i in probe_rows], dtype=bool)]
            picks = nearest_fit(vectors[probes], labels[probes], vectors[rows], labels[rows], room,
                                held=self.embed([text for text, _ in held]) if held else None,
                                held_labels=np.array([same_key(reply) for _, reply in held]),
                                probe_candidate=position[probes])
            for pick in picks:
                task, refs = train[rows[pick.index]]
                out.append((route, task, pick.gain, str(refs[route])))
        return out

    def prototypes(self, ws: Workspace, memory: PolicyMemory) -> list[tuple[str, str, Task]]:
        """``(route, reply, task)`` for each reference reply of each route that no active example of the route has
        yet: among (up to ``PROTOTYPE_POOL`` of) the reply's train tasks, the one most like its own reply's centroid
        and least like the nearest other reply's centroid. A message merely near its own centroid is often generic
        ("my card is not working") and is then among the nearest examples of many other replies' messages too."""
        have = {(r, same_key(split_example(e.text)[1] if split_example(e.text) else "")) for r in memory.routes()
                for e in memory.active_entries(r) if e.kind == EntryKind.example}
        by_reply: dict[tuple[str, str], list[Task]] = {}
        for task, refs in self.train_references(ws):
            for route, reply in refs.items():
                by_reply.setdefault((route, str(reply)), []).append(task)
        keys = sorted(by_reply)
        pools = {key: by_reply[key][:PROTOTYPE_POOL] for key in keys}
        vectors = {key: self.embed([_input_text(t) for t in pools[key]]) for key in keys}
        centroids = {key: v.mean(axis=0) for key, v in vectors.items()}
        out = []
        for route, reply in keys:
            if (route, same_key(reply)) in have:
                continue
            own = vectors[(route, reply)]
            others = [centroids[k] for k in keys if k[0] == route and k != (route, reply)]
            rival = (own @ np.stack(others).T).max(axis=1) if others else np.zeros(len(own))
            score = own @ centroids[(route, reply)] - rival
            out.append((route, reply, pools[(route, reply)][int(np.argmax(score))]))
        return out

    def _medoid(self, messages: list[str]) -> int:
        if len(messages) <= 2:
            return 0
        vectors = self.embed(messages)
        return int(np.argmax((vectors @ vectors.T).sum(axis=1)))

    def _partner(self, ws: Workspace, confusion: Confusion, anchor: str, exclude: set[str]) -> Task | None:
        """The train task whose reference reply on the route is the confused-with label (``partner="same"``: the
        expected label), nearest ``anchor``."""
        label = confusion.got if self.partner == "confused" else confusion.expected
        pool = [t for t, refs in self.train_references(ws)
                if same(str(refs.get(confusion.route, "")), label) and _input_text(t) not in exclude
                and _input_text(t) != anchor]
        if not pool:
            return None
        vectors = self.embed([anchor] + [_input_text(t) for t in pool])
        return pool[int(np.argmax(vectors[1:] @ vectors[0]))]


def _input_text(task: Task) -> str:
    """The text an example is matched on: the task's inputs as the example's ``Input:`` part reads them."""
    return split_example(format_example(route_input(task), "x"))[0]
