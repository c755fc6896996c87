"""Scoring a response against its verifiable instructions (strict mode) and writing the feedback."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from nlgrad.benchmarks.if_facts import measure
from nlgrad.benchmarks.if_offline_nltk import CHECKER_RANDOM
from nlgrad.runtime.protocols import MetricResult, Task

MAX_KWARG_CHARS = 60


@dataclass
class InstructionOutcome:
    instruction_id: str
    kwargs: dict[str, Any]
    followed: bool
    description: str = ""
    fact: str = ""
    error: str | None = None

    def label(self) -> str:
        shown = format_kwargs(self.kwargs)
        return f"{self.instruction_id} ({shown})" if shown else self.instruction_id

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.instruction_id, "kwargs": self.kwargs, "followed": self.followed,
                "fact": self.fact, "error": self.error}


def _plain(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _short(value: Any) -> str:
    text = ", ".join(map(_plain, value)) if isinstance(value, (list, tuple)) else _plain(value)
    text = " ".join(text.split())
    return text if len(text) <= MAX_KWARG_CHARS else text[:MAX_KWARG_CHARS - 3] + "..."


def format_kwargs(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in kwargs.items() if v is not None and k != "prompt")


def check_instructions(registry: dict[str, type], prompt: str, ids: Iterable[str], kwargs_list: Iterable[dict],
                       response: str) -> list[InstructionOutcome]:
    """Strict-mode check of each instruction, as upstream ``test_instruction_following_strict`` does it.

    Unknown ids and checkers that raise count as not followed (recorded in ``error``) instead of failing the task.
    """
    outcomes: list[InstructionOutcome] = []
    for instruction_id, kwargs in zip(ids, kwargs_list):
        kwargs = {k: v for k, v in dict(kwargs).items() if v is not None}
        outcome = InstructionOutcome(instruction_id, kwargs, followed=False)
        cls = registry.get(instruction_id)
        if cls is None:
            outcome.error = "unknown instruction id (no checker)"
            outcomes.append(outcome)
            continue
        try:
            CHECKER_RANDOM.reseed(f"{instruction_id}|{json.dumps(kwargs, sort_keys=True, default=str)}|{prompt}")
            instruction = cls(instruction_id)
            outcome.description = str(instruction.build_description(**kwargs) or "")
            args = instruction.get_instruction_args()
            if args and "prompt" in args:
                instruction.build_description(prompt=prompt)
            outcome.followed = bool(response.strip()) and bool(instruction.check_following(response))
        except Exception as exc:  # noqa: BLE001 - a checker crash is a failed instruction, not a crashed task
            outcome.followed = False
            outcome.error = f"checker raised {type(exc).__name__}: {_short(exc)}"
        if not outcome.followed and response.strip():
            outcome.fact = measure(instruction_id, kwargs, response, prompt)
        outcomes.append(outcome)
    return outcomes


def response_text(output: Any) -> tuple[str | None, dict[str, Any]]:
    """The response string in a program output (a string, or a dict with ``response``), and extra info."""
    if isinstance(output, str):
        return output, {}
    if isinstance(output, dict):
        text = output.get("response")
        info = {k: v for k, v in output.items() if k != "response"}
        return (text if isinstance(text, str) else None), info
    return None, {}


def result_to_metric(outcomes: list[InstructionOutcome], info: dict[str, Any] | None = None) -> MetricResult:
    """Score (fraction followed), success (all followed) and feedback that names each violated instruction."""
    info = info or {}
    total = len(outcomes)
    followed = sum(o.followed for o in outcomes)
    score = followed / total if total else 0.0
    lines = [f"Followed {followed} of {total} instructions (strict)."]
    for o in outcomes:
        if o.followed:
            continue
        requirement = f'requirement: "{_short_desc(o.description)}"' if o.description else ""
        reason = "; ".join(x for x in (o.fact, o.error, requirement) if x)
        lines.append(f"violated: {o.label()}" + (f": {reason}" if reason else ""))
    ok = [o.instruction_id for o in outcomes if o.followed]
    if ok:
        lines.append(f"followed: {', '.join(ok)}")
    if info.get("hit_token_cap"):
        lines.append(f"note: the response stopped at the {info.get('max_tokens')}-token cap, so it may be cut off "
                     "(long-form instructions can fail for length alone)")
    return MetricResult(score=score, success=total > 0 and followed == total, feedback="\n".join(lines),
                        details={"instructions": [o.to_dict() for o in outcomes], "followed": followed,
                                 "total": total, "tags": [f"missed:{o.instruction_id}" for o in outcomes
                                                          if not o.followed], **_token_info(info)})


def _token_info(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k in ("completion_tokens", "max_tokens", "hit_token_cap")}


def _short_desc(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def empty_output_metric(task: Task, output: Any, info: dict[str, Any]) -> MetricResult:
    ids = list(task.gold["instruction_id_list"]) if isinstance(task.gold, dict) else []
    kwargs = list(task.gold["kwargs"]) if isinstance(task.gold, dict) else []
    if output is None:
        what = "the agent produced no output"
    elif isinstance(output, (str, dict)):
        what = "the agent's response is empty"
    else:
        what = f"the agent's output is malformed ({type(output).__name__}, not a response string)"
    lines = [f"Followed 0 of {len(ids)} instructions (strict): {what}, so no instruction can be followed."]
    lines += [f"violated: {InstructionOutcome(i, dict(k), False).label()}" for i, k in zip(ids, kwargs)]
    return MetricResult(score=0.0, success=False, feedback="\n".join(lines),
                        details={"instructions": [{"id": i, "kwargs": k, "followed": False}
                                                  for i, k in zip(ids, kwargs)],
                                 "followed": 0, "total": len(ids), "empty": True,
                                 "tags": ["empty_response"] + [f"missed:{i}" for i in ids], **_token_info(info)})
