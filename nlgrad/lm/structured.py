"""Parse an LM reply into a pydantic model; on failure re-ask once with the validation error, then raise.

Small models wrap JSON in prose or code fences; we extract the first balanced JSON object or array before validating.
Where the model's server takes a JSON schema as a decoding grammar (the embedded llama.cpp server), the schema is sent
as ``response_format`` so the reply is valid JSON of the right shape by construction. The re-ask shows a filled-in
example object rather than the raw JSON Schema, which small models tend to copy back verbatim.
"""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from nlgrad.errors import StructuredOutputError

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)

MAX_DEPTH = 32  # every schema here is under 6 levels deep
MAX_REPLY_CHARS = 1_000_000  # far above any max_tokens in use

REASK_TEMPLATE = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with only one JSON object of this shape (replace each <...> with your content), and nothing "
    "else:\n{schema}"
)


def schema_example(schema: type[BaseModel]) -> str:
    """A one-line example object for ``schema``: each field with a ``<type: description>`` placeholder."""
    spec = schema.model_json_schema()
    defs = spec.get("$defs", {})

    def example(node: dict, depth: int = 0):
        if "$ref" in node:
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        if "anyOf" in node:
            node = next((n for n in node["anyOf"] if n.get("type") != "null"), node["anyOf"][0])
        kind = node.get("type")
        if kind == "object" and depth < 4:
            return {name: example(sub, depth + 1) for name, sub in node.get("properties", {}).items()}
        if kind == "array" and depth < 4:
            return [example(node.get("items", {}), depth + 1)]
        hint = node.get("description") or node.get("title") or kind or "value"
        if "enum" in node:
            hint = " | ".join(map(str, node["enum"]))
        return f"<{kind or 'value'}: {hint}>"

    return json.dumps(example(spec), ensure_ascii=False)


def extract_json(text: str) -> str:
    """The JSON part of a reply: a fenced block if present, else the first balanced {...} or [...] span."""
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return text.strip()
    opener = text[start]
    closer = "}" if opener == "{" else "]"
    depth = 0
    for i, ch in _outside_strings(text, start):
        if ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:].strip()


def _outside_strings(text: str, start: int = 0):
    """``(index, char)`` for each character of ``text`` from ``start`` that is not inside a JSON string."""
    in_str = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        else:
            yield i, ch


def nesting_depth(text: str) -> int:
    """The deepest ``{``/``[`` nesting in ``text`` outside JSON strings (a linear scan, no recursion)."""
    depth = deepest = 0
    for _, ch in _outside_strings(text):
        if ch in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "}]":
            depth -= 1
    return deepest


def validate_reply(text: str, schema: type[T]) -> T:
    """Validate ``text`` against ``schema``; raises ValidationError or ValueError with a readable message. A reply
    nested deeper than ``MAX_DEPTH`` or longer than ``MAX_REPLY_CHARS`` is refused before parsing (a recursive parse
    of it would raise RecursionError; the reply is cached, so it would do so on every resume)."""
    if len(text) > MAX_REPLY_CHARS:
        raise ValueError(f"the reply is {len(text)} characters; at most {MAX_REPLY_CHARS} are parsed")
    candidate = extract_json(text)
    depth = nesting_depth(candidate)
    if depth > MAX_DEPTH:
        raise ValueError(f"the JSON is nested {depth} levels deep; at most {MAX_DEPTH} are allowed")
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at char {exc.pos})") from None
    except RecursionError:
        raise ValueError("the JSON is nested too deeply to parse") from None
    try:
        return schema.model_validate(data)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply to validate") from None


def _error_text(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()[:5])
    return str(exc)


def parse_structured(lm, role: str, messages: list[dict[str, str]], schema: type[T], *, sample_index: int = 0,
                     **kwargs) -> T:
    """Ask ``role`` and parse its reply into ``schema``; one re-ask with the error; else StructuredOutputError."""
    constrains = getattr(lm, "constrains_json", None)
    if constrains is not None and constrains(role) and "response_format" not in kwargs:
        kwargs["response_format"] = {"type": "json_object", "schema": schema.model_json_schema()}
    first = lm.complete(role, messages, sample_index=sample_index, **kwargs)
    try:
        return validate_reply(first.text, schema)
    except (ValidationError, ValueError) as exc:
        error = _error_text(exc)
    schema_text = schema_example(schema)[:1500]
    reask = messages + [
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": REASK_TEMPLATE.format(error=error, schema=schema_text)},
    ]
    second = lm.complete(role, reask, sample_index=sample_index, **kwargs)
    try:
        return validate_reply(second.text, schema)
    except (ValidationError, ValueError) as exc:
        raise StructuredOutputError(role=role, model=lm.model_for(role), schema=schema.__name__, text=second.text,
                                    error=_error_text(exc)) from None
