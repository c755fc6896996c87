"""Small inputs that used to hang or crash: a YAML alias bomb in a policy file, a reply nested ~1000 levels deep
(structured parser and critic), and a calculator expression whose value has ~50 million bits. Each must end fast with
a clear error. The slow cases run in a subprocess with a time limit, so a regression fails the test instead of
hanging the suite."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from nlgrad.credit.critic import Critic
from nlgrad.credit.schemas import Diagnosis
from nlgrad.errors import StructuredOutputError
from nlgrad.lm.structured import parse_structured
from nlgrad.policy.errors import PolicyFileError
from nlgrad.policy.io import parse_policy_text
from nlgrad.runtime.trace import Trace

LIMIT_S = 20


def _alias_bomb() -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, cur in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\nschema_version: 1\nprogram: toy\nroutes: *i\n"  # 9**9 leaves, ~450 bytes


def _in_subprocess(code: str) -> subprocess.CompletedProcess:
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {LIMIT_S}s (unbounded work on a small input)")
    assert time.monotonic() - start < LIMIT_S
    return done


def test_yaml_alias_bomb_is_refused_fast(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb())
    assert path.stat().st_size < 600
    done = _in_subprocess(f"""
        from nlgrad.policy.io import load_policy_file
        from nlgrad.policy.errors import PolicyFileError
        try:
            load_policy_file({str(path)!r})
        except PolicyFileError as exc:
            print("REFUSED", exc)
    """)
    assert "REFUSED" in done.stdout, done.stderr[-2000:]
    assert "expands to more than" in done.stdout and "bomb.yaml" in done.stdout
    assert len(done.stdout) < 1000  # the message does not print the expanded value


def test_a_policy_too_large_as_written_is_not_blamed_on_aliases(tmp_path):
    """100k plain entries (no anchor, no alias) pass the node bound as written: the message says so, instead of
    pointing the user at nested aliases the file does not have."""
    path = tmp_path / "huge.yaml"
    path.write_text("schema_version: 1\nprogram: toy\nroutes:\n  toy.say:\n"
                    + "".join(f"    - text: Entry {i}.\n" for i in range(100_000)))
    start = time.monotonic()
    with pytest.raises(PolicyFileError) as info:
        parse_policy_text(path.read_text(), source=path)
    assert time.monotonic() - start < LIMIT_S
    message = str(info.value)
    assert str(path) in message and "more than 100000 nodes as written" in message
    assert "alias" not in message


def test_yaml_nested_too_deep_is_a_clear_error():
    text = "schema_version: 1\nprogram: toy\nroutes: " + "[" * 1000 + "]" * 1000 + "\n"
    with pytest.raises(PolicyFileError, match="nests deeper than 50 levels") as info:
        parse_policy_text(text, source="deep.yaml")
    assert "line 3" in str(info.value)


def test_yaml_with_a_few_anchors_still_loads():
    text = ("schema_version: 1\nprogram: toy\nroutes:\n  toy.say: &r\n    - text: Answer in upper case.\n"
            "  toy.other: *r\n")
    memory = parse_policy_text(text, source="ok.yaml")
    assert [e.text for e in memory.entries("toy.other")] == [e.text for e in memory.entries("toy.say")]


class _NestedLM:
    """Replies with JSON nested ``depth`` levels deep, every time (as a cached reply would on every resume)."""

    def __init__(self, depth: int):
        self.text = '{"a": ' * depth + "1" + "}" * depth
        self.calls = 0

    def complete(self, role, messages, **kw):
        self.calls += 1
        return type("Completion", (), {"text": self.text})()

    def model_for(self, role):
        return "fake/nested"

    def structured(self, role, messages, schema, **kw):
        return parse_structured(self, role, messages, schema, **kw)


@pytest.mark.parametrize("depth", [1000, 5000])
def test_deeply_nested_reply_is_a_structured_output_error(depth):
    lm = _NestedLM(depth)
    with pytest.raises(StructuredOutputError, match="nested"):
        parse_structured(lm, "critic", [{"role": "user", "content": "hi"}], Diagnosis)
    assert lm.calls == 2  # the re-ask happened; no RecursionError escaped


def test_critic_skips_a_deeply_nested_reply():
    critic = Critic(_NestedLM(1000))
    trace = Trace(task_id="toy/dev/0", program="toy")
    assert critic.diagnose(trace, 0.0, False, "wrong") is None
    assert critic.skipped and "nested" in critic.skipped[0]["reason"]


def test_calculator_refuses_a_tower_of_powers_fast():
    done = _in_subprocess("""
        from nlgrad.programs.calculator import calculate
        try:
            print("VALUE", calculate("(((9**64)**64)**64)**64")[:20])
        except ValueError as exc:
            print("REFUSED", exc)
    """)
    assert "REFUSED" in done.stdout and "bit limit" in done.stdout, (done.stdout, done.stderr[-2000:])


@pytest.mark.parametrize("expression", ["1e300**2", "1e308*10", "9.0**64**2", "(2**1000)*(2**1000)",
                                        "1" + "+1" * 600])
def test_calculator_overflow_is_a_value_error(expression):
    from nlgrad.programs.calculator import calculate

    with pytest.raises(ValueError, match="cannot evaluate"):
        calculate(expression)


def test_calculator_still_computes_ordinary_arithmetic():
    from nlgrad.programs.calculator import calculate

    assert calculate("(2**60)*(2**60)") == str(2 ** 120)
    assert calculate("12 * 7 + 3") == "87"
