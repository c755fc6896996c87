"""The calculator tool evaluates plain arithmetic only, and reads the expression out of a chatty LM reply."""

import pytest

from nlgrad.programs.calculator import calculate, extract_expression


@pytest.mark.parametrize("expression, value", [
    ("22 + 23", "45"), ("26 - 23", "3"), ("24 / 3", "8"), ("36 * 11", "396"), ("7 / 2", "3.5"),
    ("(2 + 3) * 4", "20"), ("-5 + 2", "-3"), ("10 // 3", "3"), ("2 ^ 3", "8"), ("6 × 7", "42"), ("1 / 3", "0.3333"),
])
def test_calculate_evaluates_arithmetic(expression, value):
    assert calculate(expression) == value


@pytest.mark.parametrize("expression, message", [
    ("", "empty expression"), ("1 / 0", "division by zero"), ("__import__('os')", "not arithmetic"),
    ("2 ** 1000", "too large"), ("22 plus 23", "cannot evaluate '22 plus 23'"), ("x + 1", "not arithmetic"),
])
def test_calculate_refuses_anything_else_with_the_expression_named(expression, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("*", r"\*")):
        calculate(expression)


@pytest.mark.parametrize("reply, expression", [
    ("22 + 23", "22 + 23"), ("`26 - 23`", "26 - 23"), ("```python\n24 / 3\n```", "24 / 3"),
    ("Expression: 36 * 11 = 396", "36 * 11"), ("\n\n40*43.\nThat is the answer", "40*43"),
])
def test_extract_expression_takes_the_expression_out_of_the_reply(reply, expression):
    assert extract_expression(reply) == expression
