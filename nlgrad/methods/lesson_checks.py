"""Deterministic checks that a proposed policy line states a reusable lesson, shared by every method.

An optimizer LM (especially a small one) often "learns" a line that only describes one task: it copies a name or a
number of that task (``copied_instance_details``), or copies a whole observation, response, action or checker
message (``copied_passage``: "To the North you see a closed plain door.", "take coin", "'synonyms' appears 1
times"), or restates the prompt's own instructions, or narrates the runs it was shown (``narrated_runs``: "in the
first run, the word 'synonyms' appears 0 times"), or gives it a condition about the run rather than the input
(``meta_condition``: "score == 0.00", "all runs that failed this way", a route name). None generalizes, and a lucky
validation draw can let one through the gate, so methods drop such lines before they reach it, with the reason
recorded in the run's files.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import TYPE_CHECKING, Iterable

from nlgrad.runtime.module import route_instructions

if TYPE_CHECKING:
    from nlgrad.methods.base import Workspace
    from nlgrad.runtime.executor import TaskResult
    from nlgrad.runtime.trace import Trace

INSTANCE_TOKEN = re.compile(r"\b(?:\d[\d,.:/-]*|[A-Z][a-zA-Z'-]+(?:\s[A-Z][a-zA-Z'-]+)*)\b")
_WORD = re.compile(r"[a-z0-9][a-z0-9']*")
_PLAIN_WORD = re.compile(r"[a-z][a-z-]*")  # letters and hyphens: a quoted word without its quotes
QUOTED_WORD = re.compile(r"[\"'‘“]([A-Za-z][A-Za-z-]{2,})[\"'’”]")
_NARRATION = re.compile(
    r"\b(?:in|for|from) (?:this|that|these|those|the (?:first|second|third|fourth|last|previous|above|given|failed)"
    r"|each of the) (?:case|cases|run|runs|task|tasks|example|examples|attempt|attempts|trace|traces)\b"
    r"|\b(?:run|example|task|trace) (?:\d+|one|two|three|four)\b"
    r"|\bthe (?:agent|model|assistant) (?:did|failed|wrote|answered|replied|produced|chose)\b", re.I)


def instance_tokens(texts_by_doc: dict[str, str], general_text: str) -> set[str]:
    """Numbers, capitalized names and quoted words that occur in fewer than two documents (task inputs, traces) and
    not in the program's own instructions: copying one of these into a rule ties it to a single task. A quoted word
    (``the word "synonyms"``) is kept with its quotes (``'synonyms'``) and counts every document that has the word,
    quoted or not."""
    seen: dict[str, set[str]] = {}
    quoted: set[str] = set()
    for doc_id, text in texts_by_doc.items():
        for token in set(INSTANCE_TOKEN.findall(text)):
            seen.setdefault(token.lower(), set()).add(doc_id)
        quoted |= {word.lower() for word in QUOTED_WORD.findall(text)}
    general = general_text.lower()
    specific = {tok for tok, docs in seen.items()
                if len(docs) < 2 and tok not in general and (len(tok) > 1 or tok.isdigit())}
    for word in quoted - set(_PLAIN_WORD.findall(general)):
        pattern = re.compile(rf"\b{re.escape(word)}\b", re.I)
        if sum(bool(pattern.search(text)) for text in texts_by_doc.values()) < 2:
            specific.add(f"'{word}'")
    return specific


def copied_instance_details(text: str, specific: set[str]) -> list[str]:
    """The task-specific tokens (from :func:`instance_tokens`) that ``text`` contains, sorted; a quoted word counts
    with or without its quotes."""
    found = {m.lower() for m in INSTANCE_TOKEN.findall(text)}
    words = set(re.findall(r"[a-z0-9][a-z0-9'-]*", text.lower()))
    plain = set(_PLAIN_WORD.findall(text.lower()))
    hits = {tok for tok in specific if tok in found or (tok[0].isdigit() and tok in words)
            or (tok.startswith("'") and tok.strip("'") in plain)}
    return sorted(hits)


def copied_passage(text: str, source: str, *, min_words: int = 4, share: float = 0.6) -> str:
    """The longest run of ``text``'s words found verbatim (as consecutive words) in ``source``, when that run is at
    least ``share`` of the line and either has ``min_words`` words or is the whole line; else ``""``. Such a line is
    a copied observation, action, response or feedback message, not advice."""
    words = _WORD.findall(text.lower())
    if not words:
        return ""
    haystack = f" {' '.join(_WORD.findall(source.lower()))} "
    best: tuple[int, int] = (0, 0)
    for start in range(len(words)):
        end = start + best[1] - best[0] + 1  # only runs longer than the best so far matter
        while end <= len(words) and f" {' '.join(words[start:end])} " in haystack:
            best = (start, end)
            end += 1
    length = best[1] - best[0]
    if length >= share * len(words) and (length >= min_words or length == len(words)):
        return " ".join(words[best[0]:best[1]])
    return ""


def narrated_runs(text: str) -> str:
    """The words by which ``text`` describes the runs it came from ("in the first run", "example 2", "the agent
    failed"), else ``""``: such a line reports what happened instead of saying what to do."""
    found = _NARRATION.search(text)
    return found.group(0) if found else ""


_SCORE_TALK = re.compile(r"\b(?:score|reward)\s*(?:==|!=|<=|>=|=|<|>|is\s+(?:\d|zero|low|high))", re.I)
# "all runs that failed this way", "failed traces": which runs failed is known after the call, never to it
_FAILURE_TALK = re.compile(r"\bfailed (?:in )?this way\b|\b(?:runs?|traces?|attempts?|rollouts?) (?:that|which) "
                           r"(?:failed|fail|scored)\b|\bfailed (?:runs?|traces?|attempts?|rollouts?)\b", re.I)


def meta_condition(when: str | None, routes: Iterable[str]) -> str:
    """What makes a condition about the run instead of the input, else ``""``: a module's route name ("if.respond":
    the field misread), the task's score ("score == 0.00") or its failure ("all runs that failed this way"), which
    no call sees when its entry is rendered."""
    if not when:
        return ""
    lowered = when.lower()
    for route in routes:
        if route and route.lower() in lowered:
            return route
    found = _SCORE_TALK.search(when) or _FAILURE_TALK.search(when)
    return found.group(0) if found else ""


def script_of(text: str) -> str:
    """The writing system most of ``text``'s letters belong to ("LATIN", "DEVANAGARI", "CJK", ...), or ``""``."""
    scripts = Counter(unicodedata.name(ch, "?").split(" ")[0] for ch in text if ch.isalpha())
    return scripts.most_common(1)[0][0] if scripts else ""


def foreign_script(text: str, instructions: str) -> str:
    """The script ``text`` is written in when it is not that of the program's ``instructions`` (a 1.5B reflector
    wrote a garbled Devanagari fragment as an English program's rule), else ``""``."""
    own, theirs = script_of(text), script_of(instructions)
    return own if own and theirs and own != theirs else ""


def script_problem(text: str, instructions: str) -> str | None:
    """Why ``text`` is no lesson for a program with these ``instructions`` (:func:`foreign_script`), else ``None``."""
    script = foreign_script(text, instructions)
    return f"written in {script.lower()} script, not in the language of the program's instructions" if script else None


def condition_problem(when: str | None, routes: Iterable[str]) -> str | None:
    """Why ``when`` is no condition on the input (:func:`meta_condition`), else ``None``."""
    meta = meta_condition(when, routes)
    return f"its condition is about the run, not the input: {meta!r}" if meta else None


def lesson_problem(text: str, *, specific: set[str], source: str, instructions: str = "") -> str | None:
    """Why ``text`` is not a reusable lesson (written in another script than the program's ``instructions``, copied
    instance details, a narration of the runs, or a copied passage of ``source``), else ``None``."""
    if problem := script_problem(text, instructions):
        return problem
    copied = copied_instance_details(text, specific)
    if copied:
        return f"copies instance details: {', '.join(copied)}"
    narration = narrated_runs(text)
    if narration:
        return f"narrates the runs instead of stating a lesson: {narration!r}"
    passage = copied_passage(text, source)
    if passage:
        return f"copies a passage of what it was shown (trace, feedback, instructions) instead of a lesson: {passage!r}"
    return None


def trace_text(trace: "Trace", *, outputs: bool = False) -> str:
    """A trace's task inputs and environment observations; with ``outputs`` also every module's output and every
    environment action (what an agent wrote), for :func:`copied_passage`."""
    parts = []
    for node in trace.nodes():
        if node["kind"] == "input":
            parts.append(str(node.get("inputs", "")))
        elif node["kind"] == "env":
            parts.append(str(node.get("observation", "")))
            if outputs and node.get("action"):
                parts.append(str(node["action"]))
        elif outputs and node["kind"] == "module":
            parts.append(str(node.get("output", "")))
    return " ".join(parts)


def lesson_source(trace: "Trace | None", feedback: str | None, shown: Iterable[str] = ()) -> str:
    """What a reflector saw and could copy: the failed trace (agent outputs included), its feedback and any other
    text it was shown (references, the program's instructions); the ``source`` of :func:`lesson_problem`."""
    return " ".join([trace_text(trace, outputs=True) if trace is not None else "", feedback or "", *map(str, shown)])


def workspace_instance_tokens(ws: "Workspace", traces: Iterable["Trace"], *, results: Iterable["TaskResult"] = (),
                              general_text: str | None = None) -> set[str]:
    """:func:`instance_tokens` over the workspace's train task inputs, these traces and the metric feedback of these
    results, one document per task (a task's input, trace and feedback are one document, so a name that only that
    task has counts once; a number only its feedback states, "response has 336 words", is that task's too); the
    general text defaults to the instructions of every route of the program."""
    docs = {t.id: str(t.inputs) for t in ws.train_tasks}
    for trace in traces:
        docs[trace.task_id] = f"{docs.get(trace.task_id, '')} {trace_text(trace)}"
    for result in results:
        if result.feedback:
            docs[result.task_id] = f"{docs.get(result.task_id, '')} {result.feedback}"
    if general_text is None:
        general_text = " ".join(route_instructions(ws.program, r) for r in ws.program.routes)
    return instance_tokens(docs, general_text)
