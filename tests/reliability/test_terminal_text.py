"""Text that comes from files, data or models reaches the terminal as text: an error that quotes a file's first
characters shows ``:x:`` and ``[bold]`` literally (rich would turn them into an emoji and a style), and bidi or
control characters (U+202E right-to-left override, the Trojan Source characters, ESC, CR) are shown as escapes such
as ``\\u202e`` by ``policy show``, ``policy diff`` and every error line, so they cannot reorder or hide what is
printed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from nlgrad.cli import app
from nlgrad.terminal_text import escape_controls

RLO = "\u202e"
BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", RLO, "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f",
        "\u061c"]


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _assert_no_raw_controls(text: str) -> None:
    for ch in BIDI + ["\x1b", "\r", "\x07", "\u2028"]:
        assert ch not in text, (repr(ch), text)


@pytest.mark.parametrize("ch, shown", [(RLO, "\\u202e"), ("\u2066", "\\u2066"), ("\x1b", "\\x1b"), ("\r", "\\x0d"),
                                       ("\x85", "\\x85"), ("\u2028", "\\u2028")])
def test_escape_controls_shows_each_as_an_escape(ch, shown):
    assert escape_controls(f"a{ch}b") == f"a{shown}b"


def test_escape_controls_keeps_ordinary_text():
    text = "tab\there\nnew line, ünïcödé, 中文, العربية, emoji 👍🏽 and 👨‍👩‍👧 (zero-width joiners), [bold] :x:"
    assert escape_controls(text) == text


# ---------------------------------------------------------------------------------------------- error lines
@pytest.mark.parametrize("head", [":x: not a policy [", "[bold]:thumbs_up: {", RLO + "evil.txt {"])
def test_an_error_quoting_a_file_is_printed_literally(tmp_path, head):
    path = tmp_path / "bad.json"
    path.write_text(head)
    result = _run("policy", "show", path)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error:")
    shown = escape_controls(head)
    assert repr(shown)[1:-1] in result.output or shown in result.output, result.output
    assert "❌" not in result.output and "👍" not in result.output
    _assert_no_raw_controls(result.output)


@pytest.mark.parametrize("value", [":x:", "[bold]:x:[/bold]", "coin" + RLO + "txt.exe", "a\x1b[2Jb"])
def test_command_errors_are_printed_literally(value):
    result = _run("eval", "--benchmark", value)
    assert result.exit_code == 2, result.output
    assert "❌" not in result.output
    assert escape_controls(value) in "".join(result.output.split()) or repr(escape_controls(value)) in result.output
    _assert_no_raw_controls(result.output)


def test_policy_apply_warning_is_printed_literally(tmp_path):
    policy = tmp_path / "p.json"
    policy.write_text(json.dumps({"schema_version": 1, "program": "toy", "routes": {"toy.say": [{"text": "x"}]}}))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("hi\n")
    result = _run("policy", "apply", policy, "--route", ":x:", "--prompt-file", prompt)
    assert ":x:" in result.output and "❌" not in result.output


# ---------------------------------------------------------------------------------------------- policy show / diff
def _hostile_policy(tmp_path, text: str):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({
        "schema_version": 1, "program": "toy" + RLO, "benchmark": "toy", "note": ":x: shipped" + RLO,
        "routes": {"toy.say": [{"text": text, "when": "the user" + RLO + " asks", "match": ["refund" + RLO]},
                               {"text": "Plain entry.", "provenance": {"source": "human", "trace_ids": [
                                   "toy/dev/0" + RLO]}}]}}))
    return path


@pytest.mark.parametrize("ch", BIDI)
def test_policy_show_escapes_bidi_characters(tmp_path, ch):
    path = _hostile_policy(tmp_path, f"Reply {ch}gnp.exe now {ch}")
    result = _run("policy", "show", path)
    assert result.exit_code == 0, result.output
    _assert_no_raw_controls(result.output)
    flat = "".join(result.output.split())
    assert escape_controls(ch) in flat and "\\u202e" in flat  # the entry's and the note's, when, match, trace id
    assert ":x:shipped" in flat and "❌" not in result.output


def test_policy_show_still_shows_ordinary_entries_unchanged(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"schema_version": 1, "program": "toy", "routes": {
        "toy.say": [{"text": "Antworte kurz: ünïcödé, 中文 👍🏽."}]}}))
    result = _run("policy", "show", path)
    assert result.exit_code == 0 and "Antworte kurz: ünïcödé, 中文 👍🏽." in result.output


def test_policy_show_prints_an_entrys_reason_literally(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"schema_version": 1, "program": "toy", "routes": {"toy.say": [
        {"text": "Plain entry.", "provenance": {"source": "nlpg", "reason": "confusion [bold]a[/bold] -> b" + RLO}}]}}))
    result = _run("policy", "show", path)
    assert result.exit_code == 0, result.output
    _assert_no_raw_controls(result.output)
    flat = "".join(result.output.split())
    assert "why:" in flat and "[bold]a[/bold]" in flat and "->b\\u202e" in flat  # folded by the table's width


def test_policy_diff_escapes_bidi_characters(tmp_path):
    old = _hostile_policy(tmp_path, "Reply " + RLO + "now")
    new = tmp_path / "new.json"
    data = json.loads(old.read_text())
    data["routes"]["toy.say"][0]["text"] = "Reply :x: " + RLO + "later"
    data["routes"]["toy.say"].append({"text": "Added " + RLO + "entry."})
    new.write_text(json.dumps(data))
    result = _run("policy", "diff", old, new)
    assert result.exit_code == 0, result.output
    _assert_no_raw_controls(result.output)
    assert "\\u202e" in result.output and ":x:" in result.output and "❌" not in result.output
