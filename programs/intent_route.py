"""Intent routing in two steps: choose the area first, then the intent among that area's labels.

Modules: ``intent.group`` (the areas, each with a few of its intents, in a fixed system prompt) and
``intent.label`` (one fixed system prompt per area, listing only that area's labels; one route for all areas).
Groups come from :func:`nlgrad.programs.intent_groups.label_groups`: CLINC150's own domains (plus ``oos``), or the
program's grouping of Banking77's labels. An out-of-scope area ends the task with the out-of-scope label, and an
area of one label needs no second call. A failure can be the first route's (wrong area) or the second's (right
area, wrong intent): :meth:`reference_outputs` gives each route's right reply, so a learner can tell them apart.

Replies are constrained (or mapped) as in :mod:`nlgrad.programs.intent_classify`. Output: ``{"label", "exact",
"reply", "group", "group_exact"}``.
"""

from __future__ import annotations

from typing import Any

from nlgrad.programs import program_template
from nlgrad.programs.intent_classify import benchmark_labels
from nlgrad.programs.intent_groups import label_groups
from nlgrad.programs.intent_labels import read_label
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.module import Module
from nlgrad.runtime.protocols import Task
from nlgrad.runtime.registry import load_benchmark

GROUP, LABEL = "intent.group", "intent.label"


class IntentRouteProgram:
    name = "intent_route"

    def __init__(self, benchmark=None, *, max_tokens: int = 24):
        self.benchmark = benchmark if benchmark is not None else load_benchmark("banking77")
        labels, self.oos = benchmark_labels(self.benchmark)
        self.groups = label_groups(self.benchmark)
        self.group_of = {label: group for group, members in self.groups.items() for label in members}
        names = list(self.groups)
        self.group = Module(route=GROUP, template=program_template("intent_group.j2"),
                            parser=lambda text, inputs: read_label(text, names), max_tokens=max_tokens,
                            template_name="intent_group.j2",
                            constants={"groups": self.groups, "oos": self.oos if self.oos in names else None},
                            choices=names)
        template = program_template("intent_classify.j2")
        self.label_modules = {
            group: Module(route=LABEL, template=template, max_tokens=max_tokens, template_name="intent_classify.j2",
                          parser=lambda text, inputs, members=members: read_label(text, members),
                          constants={"labels": members, "oos": None}, choices=members)
            for group, members in self.groups.items() if len(members) > 1}

    @property
    def routes(self) -> list[str]:
        return [GROUP, LABEL]

    def run(self, task: Task, ctx: RunContext) -> dict[str, Any]:
        message = task.inputs["message"]
        chosen = ctx.call(self.group, message=message)
        group = chosen.value["label"]
        info = {"group": group, "group_exact": chosen.value["exact"]}
        members = self.groups[group]
        if group not in self.label_modules:  # out of scope, or an area of one intent
            return {"label": members[0], "exact": chosen.value["exact"], "reply": chosen.value["reply"], **info}
        picked = ctx.call(self.label_modules[group], message=message, after=[chosen])
        return {**picked.value, **info}

    def reference_outputs(self, task: Task) -> dict[str, str]:
        """Each route's right reply for ``task``: the gold label's area, and the gold label."""
        gold = str(task.gold)
        return {GROUP: self.group_of.get(gold, gold), LABEL: gold}
