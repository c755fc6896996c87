"""Reading one agent turn of a tool-using conversation: a tool call, a message to the user, or an unreadable reply;
and the canonical action text for a parsed turn. The tau2 agent program (``nlgrad.programs.tau2_agent``) reads its
LM reply with it, and the tau2 environment (``nlgrad.benchmarks.tau2``) reads the action it is sent the same way."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_MISSING = object()
_FENCE = re.compile(r"```(?:json|python|tool_call)?\s*(.*?)```", re.S)
_NAME_KEYS = ("tool", "name", "tool_name", "function", "action")
_ARG_KEYS = ("arguments", "args", "parameters", "params", "input", "kwargs")
_MSG_KEYS = ("message", "content", "response", "reply", "text", "say")
_RESPOND = {"respond", "message", "reply", "say", "send_message", "respond_to_user"}
_CALL = re.compile(r"^\s*(?:tool\s*:\s*|call\s*:\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*\.?\s*$", re.S)
_SPEAKER = re.compile(r"^\s*(?:agent|assistant|message|reply|response)\s*:\s*", re.I)


def _loads(text: str) -> Any:
    """JSON, else a Python literal (single quotes, True/None); None when neither reads."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _json_objects(text: str) -> list[Any]:
    """Objects decodable at each '{' (strict JSON, then a Python-literal reading for single quotes/True/None)."""
    found, decoder = [], json.JSONDecoder()
    i = text.find("{")
    while i != -1 and len(found) < 3:
        obj, end = None, i + 1
        try:
            obj, length = decoder.raw_decode(text[i:])
            end = i + length
        except json.JSONDecodeError:
            close = text.rfind("}")
            candidates = [text[i:close + 1]] if close > i else []
            candidates += [text[i:].rstrip() + "}" * k for k in (1, 2)]  # a small model often drops a closing brace
            for candidate in candidates:
                obj = _loads(candidate)
                if isinstance(obj, dict):
                    end = i + len(candidate)
                    break
        if isinstance(obj, dict):
            found.append(obj)
            i = text.find("{", end)
        else:
            i = text.find("{", i + 1)
    return found


def _from_object(obj: dict[str, Any]) -> dict[str, Any] | None:
    name = next((obj[k] for k in _NAME_KEYS if k in obj), None)
    if isinstance(name, dict):  # OpenAI style {"function": {"name": ..., "arguments": "..."}}
        obj, name = name, name.get("name")
    if isinstance(name, str) and name.strip().lower() in _RESPOND:  # tau-bench's {"name": "respond", ...}
        args = next((obj[k] for k in _ARG_KEYS if isinstance(obj.get(k), dict)), obj)
        text = next((args[k] for k in _MSG_KEYS if isinstance(args.get(k), str)), "")
        return {"kind": "message", "text": text.strip()} if text.strip() else None
    if isinstance(name, str) and name.strip():
        args = next((obj[k] for k in _ARG_KEYS if k in obj), _MISSING)
        if args is _MISSING:
            args = {k: v for k, v in obj.items() if k not in _NAME_KEYS}
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                return {"kind": "invalid", "error": f"the arguments of {name} are not valid JSON: {args[:120]!r}"}
        if args is None:
            args = {}
        return {"kind": "tool", "name": name.strip(), "arguments": args}
    message = next((obj[k] for k in _MSG_KEYS if isinstance(obj.get(k), str)), None)
    if message is not None and message.strip():
        return {"kind": "message", "text": message.strip()}
    return None


def _python_call(text: str, tool_names: set[str]) -> dict[str, Any] | None:
    match = _CALL.match(text)
    if not match or match.group(1) not in tool_names:
        return None
    try:
        call = ast.parse(f"f({match.group(2)})", mode="eval").body
        args = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}  # type: ignore[attr-defined]
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {"kind": "invalid", "error": f"could not read the arguments of {match.group(1)}(...); use JSON"}
    if call.args:  # type: ignore[attr-defined]
        return {"kind": "invalid", "error": f"{match.group(1)}(...) needs named arguments; use JSON"}
    return {"kind": "tool", "name": match.group(1), "arguments": args}


def parse_agent_reply(text: str | None, tool_names: set[str] | list[str] | None = None) -> dict[str, Any]:
    """Read one agent turn: ``{"kind": "tool", "name", "arguments"}``, ``{"kind": "message", "text"}`` or
    ``{"kind": "invalid", "error"}``. Never raises.

    A JSON object with a tool name (``tool``/``name``/``function``...) is a tool call, wherever it is in the reply
    (text around it is dropped); a JSON object with ``message`` is a message; ``name(arg="x")`` naming a known tool
    is a tool call; text that tries to be a tool call but cannot be read is invalid; any other text is a message.
    """
    names = set(tool_names or ())
    raw = (text or "").strip()
    if not raw:
        return {"kind": "invalid", "error": "the reply was empty"}
    fenced = _FENCE.search(raw)
    body = fenced.group(1).strip() if fenced else raw
    for obj in _json_objects(body) or _json_objects(raw):
        parsed = _from_object(obj)
        if parsed is not None:
            return parsed
    call = _python_call(body, names)
    if call is not None:
        return call
    looks_like_call = "{" in raw and re.search(r"[\"']?(?:tool|name|arguments|function)[\"']?\s*:", raw)
    if looks_like_call:
        return {"kind": "invalid", "error": "the tool call is not valid JSON; write it as "
                                            '{"tool": "<name>", "arguments": {...}}'}
    if any(re.match(rf"\s*{re.escape(n)}\s*\(", body) for n in names):
        return {"kind": "invalid", "error": "could not read the tool call; write it as "
                                            '{"tool": "<name>", "arguments": {...}}'}
    message = _SPEAKER.sub("", _FENCE.sub(lambda m: m.group(1), raw)).strip()
    return {"kind": "message", "text": message} if message else {"kind": "invalid", "error": "the reply was empty"}


def format_action(parsed: dict[str, Any], raw: str = "") -> str:
    """The canonical action text sent to the environment (it parses back to the same action)."""
    if parsed.get("kind") == "tool":
        return json.dumps({"tool": parsed["name"], "arguments": parsed["arguments"]}, ensure_ascii=False)
    if parsed.get("kind") == "message":
        return parsed["text"]
    return raw
