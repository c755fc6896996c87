"""credit/render.py: the bounded views of a trace that critic prompts read (module view, episode lines), and the
shared clip helper (nlgrad.text) they use."""

from nlgrad.credit.render import episode_lines, module_view
from nlgrad.runtime.trace import Trace
from nlgrad.text import clip


def test_clip_collapses_whitespace_and_bounds_length():
    assert clip("  a \n b\tc ", 10) == "a b c"
    assert clip(None, 5) == ""
    assert clip("x" * 20, 10) == "xxxxxxx..." and len(clip("x" * 20, 10)) == 10
    assert clip("x" * 10, 10) == "x" * 10


def test_clip_without_squash_keeps_the_lines_and_only_bounds_length():
    assert clip("a\n  b", 10, squash=False) == "a\n  b"
    assert clip("line one\nline two", 10, squash=False) == "line on..."
    assert clip(1234, 10, squash=False) == "1234" and clip(None, 5, squash=False) == ""


def test_module_view_shows_the_last_message_the_action_and_an_override():
    node = {"route": "twx.act", "messages": [{"role": "system", "content": "rules"},
                                             {"role": "user", "content": "look  around\n" + "y" * 900}],
            "output": "I will open the door", "parsed": {"action": "open door"},
            "override": {"chosen": "go north"}, "error": "e" * 300}
    view = module_view(node)
    assert view["route"] == "twx.act"
    assert view["input"].startswith("look around y") and len(view["input"]) == 700
    assert view["output"] == "I will open the door -> open door (overridden by the program: go north)"
    assert len(view["error"]) == 200
    assert module_view({"route": "r"}) == {"route": "r", "input": "", "output": "", "error": ""}


def _episode(steps: int) -> Trace:
    trace = Trace(task_id="t")
    for i in range(1, steps + 1):
        call = trace.add_node("module", "twx.act", messages=[{"role": "user", "content": f"step {i}"}],
                              output=f"action {i}")
        trace.add_node("env", parents=[call], observation=f"you see room {i}\n" + "z" * 300)
    return trace


def test_episode_lines_pair_each_call_with_its_observation():
    lines = episode_lines(_episode(3), "twx.act", obs_chars=20)
    assert [(line["step"], line["output"]) for line in lines] == [(1, "action 1"), (2, "action 2"), (3, "action 3")]
    assert lines[0]["result"] == "you see room 1 zz..." and len(lines[0]["result"]) == 20
    assert episode_lines(_episode(3), "other.route") == []


def test_long_episodes_keep_their_start_and_end():
    lines = episode_lines(_episode(40), "twx.act", max_steps=9)
    assert [line["step"] for line in lines] == [1, 2, 3, 35, 36, 37, 38, 39, 40]
