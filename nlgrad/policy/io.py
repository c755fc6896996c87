"""Reading and writing policy files: canonical JSON version files and hand-written YAML (or JSON) files.

Every failure to read a file becomes one :class:`PolicyFileError` naming the file, the field (a dotted path such as
``routes.twx.act.0.text``, or ``line L column C`` for a syntax error) and the offending value. Reading never writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from nlgrad.policy.errors import PolicyFileError
from nlgrad.policy.memory import PolicyMemory, dump_policy_json  # noqa: F401 - dump_policy_json: io's public name
from nlgrad.policy.schema import SUPPORTED_SCHEMA_VERSIONS, FieldProblem
from nlgrad.policy.yaml_bounds import check_yaml_bounds

YAML_SUFFIXES = (".yaml", ".yml")
_MISSING = "<missing>"
MAX_POLICY_BYTES = 8 * 1024 * 1024  # a policy within its bounds is well under 1 MB


def _syntax_error(source: Path | str, kind: str, line: int | None, column: int | None, text: str, detail: str):
    where = f"line {line} column {column}" if line is not None else "<file>"
    snippet = ""
    if line is not None:
        lines = text.splitlines()
        if 1 <= line <= len(lines):
            snippet = lines[line - 1].strip()
    return PolicyFileError(f"not valid {kind}: {detail}", path=source, field=where, value=snippet)


def _parse(text: str, source: Path | str, fmt: str) -> Any:
    if fmt == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise _syntax_error(source, "JSON", exc.lineno, exc.colno, text, exc.msg) from None
        except (RecursionError, ValueError) as exc:
            raise PolicyFileError(f"not valid JSON: {exc}", path=source, field="<file>", value=text[:80]) from None
    try:
        check_yaml_bounds(text, source)
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        raise _syntax_error(source, "YAML", line, column, text, str(exc.problem or exc).strip()) from None
    except PolicyFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - PyYAML raises many types (ValueError for bad timestamps, ...)
        raise PolicyFileError(f"not valid YAML: {exc}", path=source, field="<file>", value=text[:80]) from None


def _format_validation(source: Path | str, exc: ValidationError) -> PolicyFileError:
    errors = exc.errors(include_url=False)
    first = errors[0]
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    problem = (first.get("ctx") or {}).get("error")
    if isinstance(problem, FieldProblem):
        return PolicyFileError(problem.problem + more, path=source, field=problem.field, value=problem.value)
    field = ".".join(str(part) for part in first["loc"])
    if first["type"] == "missing":
        return PolicyFileError("required field is missing" + more, path=source, field=field, value=_MISSING)
    message = first["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    return PolicyFileError(message + more, path=source, field=field, value=first.get("input"))


def memory_from_data(data: Any, source: Path | str) -> PolicyMemory:
    """Validate parsed file data into a :class:`PolicyMemory` (schema version checked first)."""
    if not isinstance(data, dict):
        raise PolicyFileError("a policy file must be a mapping with schema_version, program and routes",
                              path=source, field="<root>", value=data if data is None else type(data).__name__)
    if "schema_version" not in data:
        raise PolicyFileError("required field is missing", path=source, field="schema_version", value=_MISSING)
    version = data["schema_version"]
    if isinstance(version, bool) or version not in SUPPORTED_SCHEMA_VERSIONS:
        raise PolicyFileError(
            f"unknown schema version (this nlgrad reads {', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))})",
            path=source, field="schema_version", value=version)
    try:
        return PolicyMemory.model_validate(data)
    except ValidationError as exc:
        raise _format_validation(source, exc) from None
    except FieldProblem as exc:  # raised outside pydantic's wrapping (defensive)
        raise PolicyFileError(exc.problem, path=source, field=exc.field, value=exc.value) from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise PolicyFileError(f"invalid policy: {exc}", path=source, field="<root>", value=None) from None


def parse_policy_text(text: str, *, source: Path | str = "<text>", fmt: str | None = None) -> PolicyMemory:
    """Parse policy text. ``fmt`` is "json" or "yaml"; by default it is chosen from the file suffix / first char."""
    if fmt is None:
        suffix = Path(str(source)).suffix.lower()
        if suffix in YAML_SUFFIXES:
            fmt = "yaml"
        elif suffix == ".json":
            fmt = "json"
        else:
            fmt = "json" if text.lstrip().startswith("{") else "yaml"
    if not text.strip():
        raise PolicyFileError("the file is empty", path=source, field="<file>", value=text)
    return memory_from_data(_parse(text, source, fmt), source)


def read_policy_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_POLICY_BYTES:
            raise PolicyFileError(f"the file is {size} bytes; a policy file may be at most {MAX_POLICY_BYTES}",
                                  path=path, field="<file>", value=str(path))
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PolicyFileError("no such policy file or directory", path=path, field="<file>", value=str(path)) from None
    except OSError as exc:
        raise PolicyFileError(f"cannot read the file: {exc.strerror or exc}", path=path, field="<file>",
                              value=str(path)) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PolicyFileError(f"not UTF-8 text: {exc.reason}", path=path, field=f"byte {exc.start}",
                              value=raw[max(0, exc.start - 10):exc.start + 10]) from None


def load_policy_file(path: str | Path) -> PolicyMemory:
    """Load one JSON version file or hand-written YAML/JSON policy file."""
    path = Path(path)
    return parse_policy_text(read_policy_text(path), source=path)
