"""A calculator tool: evaluates an arithmetic expression (numbers, + - * / // % **, parentheses) without ``eval``.

Programs use it behind an LM module that writes the expression (``twx_scaffolded``'s ``twx.solve`` turns the math
problem TWX ``arithmetic`` shows into one); the small model translates words into an expression reliably but does not
compute reliably, so the tool does the computing.
"""

from __future__ import annotations

import ast
import operator
import re

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_MAX_EXPONENT = 64
MAX_BITS = 1024  # operand and result bound (about 308 decimal digits): arithmetic word problems stay far below
MAX_CHARS = 500  # expression length bound (a deeper tree would exhaust the recursive evaluator)
_ANSWER_PREFIX = re.compile(r"^\s*(expression|answer)\s*[:=]\s*", re.I)


def extract_expression(reply: str) -> str:
    """The expression in an LM reply: its first non-empty line without code fences, quotes, a leading
    ``Expression:`` and a trailing ``= ...``."""
    lines = [line.strip().strip("`'\"") for line in reply.replace("```", "\n").splitlines()]
    line = next((line for line in lines if line and line.lower() not in ("python", "text")), "")
    line = _ANSWER_PREFIX.sub("", line)
    return line.split("=")[0].strip().rstrip(".").strip()


def _bounded(value: float) -> float:
    """``value`` if it is a finite real number within ``MAX_BITS``; else ValueError."""
    if not isinstance(value, (int, float)):  # a negative number to a fractional power is complex
        raise ValueError(f"the result is not a real number ({type(value).__name__})")
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise ValueError(f"a number of {value.bit_length()} bits is past the calculator's {MAX_BITS}-bit limit")
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        raise ValueError("the result is not a finite number")
    return value


def _check_operands(op: ast.operator, left: float, right: float) -> None:
    """Refuse an operation whose integer result would pass ``MAX_BITS``, before computing it (a big power or
    product takes seconds to minutes and cannot be interrupted)."""
    if isinstance(op, ast.Pow):
        if abs(right) > _MAX_EXPONENT:
            raise ValueError(f"exponent {right} is too large")
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            if (abs(left).bit_length() - 1) * right > MAX_BITS:
                raise ValueError(f"a power of a {abs(left).bit_length()}-bit number to {right} is past the "
                                 f"calculator's {MAX_BITS}-bit limit")
    if isinstance(op, ast.Mult) and isinstance(left, int) and isinstance(right, int):
        if abs(left).bit_length() + abs(right).bit_length() > MAX_BITS + 1:
            raise ValueError(f"the product is past the calculator's {MAX_BITS}-bit limit")


def _value(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _bounded(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        _check_operands(node.op, left, right)
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _bounded(_UNARY[type(node.op)](_value(node.operand)))
    raise ValueError(f"not arithmetic: {ast.dump(node)[:80]}")


def calculate(expression: str) -> str:
    """The value of ``expression`` as text: an integer when it is whole, else rounded to 4 decimals. Raises
    ValueError (naming the expression) for anything that is not plain arithmetic, divides by zero or has no real
    value; every other evaluation error becomes that ValueError too, so a caller handles one exception type."""
    text = expression.strip().replace("×", "*").replace("÷", "/").replace("^", "**")
    if not text:
        raise ValueError("empty expression")
    if len(text) > MAX_CHARS:
        raise ValueError(f"cannot evaluate {expression[:60]!r}...: longer than {MAX_CHARS} characters")
    try:
        value = _value(ast.parse(text, mode="eval"))
        if isinstance(value, int):
            return str(value)
        return str(int(value)) if value.is_integer() else f"{value:.4f}".rstrip("0").rstrip(".")
    except Exception as exc:  # noqa: BLE001 - SyntaxError, ArithmeticError, TypeError, RecursionError, MemoryError...
        raise ValueError(f"cannot evaluate {expression!r}: {exc or type(exc).__name__}") from None
