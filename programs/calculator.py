"""A calculator tool: evaluates an arithmetic expression (numbers, + - * / // % **, parentheses) without ``eval``.

Programs use it behind an LM module that writes the expression (``twx_react``'s ``twx.solve`` turns the math problem
TWX ``arithmetic`` shows into one); the small model translates words into an expression reliably but does not
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
_ANSWER_PREFIX = re.compile(r"^\s*(expression|answer)\s*[:=]\s*", re.I)


def extract_expression(reply: str) -> str:
    """The expression in an LM reply: its first non-empty line without code fences, quotes, a leading
    ``Expression:`` and a trailing ``= ...``."""
    lines = [line.strip().strip("`'\"") for line in reply.replace("```", "\n").splitlines()]
    line = next((line for line in lines if line and line.lower() not in ("python", "text")), "")
    line = _ANSWER_PREFIX.sub("", line)
    return line.split("=")[0].strip().rstrip(".").strip()


def _value(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ValueError(f"exponent {right} is too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand))
    raise ValueError(f"not arithmetic: {ast.dump(node)[:80]}")


def calculate(expression: str) -> str:
    """The value of ``expression`` as text: an integer when it is whole, else rounded to 4 decimals. Raises
    ValueError (naming the expression) for anything that is not plain arithmetic or divides by zero."""
    text = expression.strip().replace("×", "*").replace("÷", "/").replace("^", "**")
    if not text:
        raise ValueError("empty expression")
    try:
        value = _value(ast.parse(text, mode="eval"))
    except (SyntaxError, ZeroDivisionError, ValueError) as exc:
        raise ValueError(f"cannot evaluate {expression!r}: {exc}") from None
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0").rstrip(".")
