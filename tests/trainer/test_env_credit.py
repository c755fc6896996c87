"""GiGPO and ProGPO on hand-built episodes: anchors keyed on the environment's own state (recorded beside the trace),
returns discounted by environment steps, ProGPO triggered by success flags and its step level combined with GiGPO."""

import pytest

pytest.importorskip("torch")

from nlgrad.runtime.protocols import Observation, StepResult, Task  # noqa: E402
from nlgrad.runtime.trace import Trace  # noqa: E402
from nlgrad.trainer.config import TrainConfig  # noqa: E402
from nlgrad.trainer.credit import assign_advantages  # noqa: E402
from nlgrad.trainer.env_states import RecordingBenchmark, StateLog, state_key_of  # noqa: E402
from nlgrad.trainer.hf_lm import SampledTurn  # noqa: E402
from nlgrad.trainer.rollout import EpisodeRollout, align_turns  # noqa: E402

TASK = Task(id="twx/coin/train/0", split="train", inputs={})


def close(a, b, tol=1e-6):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


class FakeEnv:
    """Rooms as states; the observation text says which actions were tried (so the text differs per visit)."""

    def __init__(self, moves):
        self.moves, self.closed = moves, False

    def reset(self, task):
        self.i = 0
        return Observation(text="You are in the kitchen.", valid_actions=["go east"], info={"state_key": "kitchen"})

    def step(self, action):
        room = self.moves[self.i]
        self.i += 1
        return StepResult(Observation(text=f"After {action}: {room}.", info={"state_key": room}))

    def close(self):
        self.closed = True


class FakeBenchmark:
    id, kind = "fake", "interactive"

    def __init__(self, moves):
        self.moves = moves

    def make_env(self):
        return FakeEnv(self.moves)


def test_recording_benchmark_logs_the_environment_state_of_every_observation():
    log = StateLog()
    bench = RecordingBenchmark(FakeBenchmark(["hall", "kitchen"]), log)
    assert bench.id == "fake" and bench.kind == "interactive"  # everything else is the benchmark's
    env = bench.make_env()
    env.reset(TASK)
    env.step("go east")
    env.step("go west")
    assert log.states() == ["state:kitchen", "state:hall", "state:kitchen"]
    env.reset(TASK)  # a new episode starts a new list
    assert log.states() == ["state:kitchen"]
    env.close()
    assert env.env.closed
    # without a state_key: the text and the full, sorted action list
    plain = state_key_of(Observation(text="a  room", valid_actions=["b", "a"]))
    assert plain == state_key_of(Observation(text="a room", valid_actions=["a", "b"])) != "state:a room"


def episode_trace(calls, states):
    """A trace of module calls and environment steps: ``calls`` is a list of ("act"/"confirm", shown actions) or
    "step"; an environment node per reset/step, module nodes carrying the prompt's observation and shown actions."""
    trace = Trace(task_id=TASK.id)
    root = trace.add_node("input", "task.input")
    trace.add_node("env", "env.reset", parents=[root], observation="start", valid_actions=[])
    step = 0
    for call in calls:
        if call == "step":
            step += 1
            trace.add_node("env", "env.step", parents=[root], observation=f"obs {step}", step=step)
        else:
            route, shown = call
            trace.add_node("module", route, parents=[root], inputs={"observation": "same text", "actions": shown},
                           messages=[{"role": "user", "content": f"{route} {shown}"}])
    sampled = [SampledTurn(messages=[], prompt_ids=[1], completion_ids=[2], text="x") for c in calls if c != "step"]
    return align_turns(sampled, trace, states), states


def rollout(index, calls, states, score, success):
    turns, states = episode_trace(calls, states)
    return EpisodeRollout(task=TASK, index=index, turns=turns, score=score, success=success, observations=states)


def two_episodes():
    # A: acts in kitchen, moves to hall; acts and confirms in hall; the step wins (score 1).
    a = rollout(0, [("twx.act", ["go east", "look"]), "step", ("twx.act", ["take coin"]),
                    ("twx.confirm", ["take coin"]), "step"], ["kitchen", "hall", "won"], 1.0, True)
    # B: acts in kitchen with the list shown in another order, stays in kitchen (a loop), acts there again, moves
    # to hall, acts there, then goes to the cellar (score 0).
    b = rollout(1, [("twx.act", ["look", "go east"]), "step", ("twx.act", ["go east"]), "step",
                    ("twx.act", ["take coin", "go west"]), "step"], ["kitchen", "kitchen", "hall", "cellar"], 0.0,
                False)
    return a, b


def test_turns_are_anchored_on_the_environment_state_and_step():
    a, b = two_episodes()
    assert [t.env_step for t in a.turns] == [0, 1, 1] and [t.env_step for t in b.turns] == [0, 1, 2]
    assert a.horizon == 2 and b.horizon == 3
    # the kitchen turns share one anchor although the prompts showed different action lists
    assert a.turns[0].anchor == b.turns[0].anchor == b.turns[1].anchor
    assert a.turns[1].anchor == b.turns[2].anchor  # act in the hall
    assert a.turns[2].anchor != a.turns[1].anchor  # the confirm call in the hall is its own decision


def config(**kw):
    return TrainConfig(**{"benchmark": "twx/coin", "model": "tiny", **kw})


def test_gigpo_on_environment_states_and_steps():
    a, b = two_episodes()
    assign_advantages([[a, b]], config(method="gigpo", gamma=0.5, omega=1.0), 0)
    # by hand: returns by environment step, gamma .5: A [.5, 1] (outcome 1 on its 2nd step), B [0, 0, 0].
    # turn returns: A [.5, 1, 1] (both hall calls at step 1), B [0, 0, 0].
    # anchor (act, kitchen): A .5, B 0, B 0 -> mean 1/6 -> [1/3, -1/6, -1/6]; (act, hall): A 1, B 0 -> [.5, -.5];
    # (confirm, hall): A alone -> 0. Episode advantages (mean): [.5, -.5].
    assert close([t.advantage for t in a.turns], [0.5 + 1 / 3, 0.5 + 0.5, 0.5])
    assert close([t.advantage for t in b.turns], [-0.5 - 1 / 6, -0.5 - 1 / 6, -0.5 - 0.5])


def test_progpo_triggers_on_success_and_its_step_level_combines_with_gigpo():
    # two failed episodes with partial credit: ProGPO's coverage fires (the old score == 0 trigger did not)
    a = rollout(0, [("twx.act", ["x"]), "step", ("twx.act", ["y"]), "step"], ["kitchen", "hall", "cellar"], 0.5,
                False)
    b = rollout(1, [("twx.act", ["x"]), "step", ("twx.act", ["y"]), "step"], ["kitchen", "kitchen", "hall"], 0.5,
                False)
    stats = assign_advantages([[a, b]], config(method="progpo", normalize="mean"), 0)
    # coverage [2, 1] -> mean-normalized [.5, -.5] on every turn
    assert stats["coverage_groups"] == 1
    assert [t.advantage for t in a.turns] == [0.5, 0.5] and [t.advantage for t in b.turns] == [-0.5, -0.5]

    # step level: novelty A [1, 1], B [0, 1]; returns (gamma .5) A [1.5, 1], B [.5, 1]; mean 1 -> A [.5, 0], B [-.5, 0]
    assign_advantages([[a, b]], config(method="progpo", progpo_step=True, gamma=0.5, normalize="mean"), 0)
    assert close([t.advantage for t in a.turns], [0.5, 0.0]) and close([t.advantage for t in b.turns], [-0.5, 0.0])

    # with GiGPO: step rewards are novelty plus the outcome on the last step: A [1, 1.5], B [0, 1.5];
    # returns A [1.75, 1.5], B [.75, 1.5]. Anchors: (act, kitchen) holds A0, B0 and B1 (B stayed in the kitchen):
    # [1.75, .75, 1.5] mean 4/3; (act, hall) holds A1 alone -> 0. Episode advantages [0, 0] (equal scores).
    stats = assign_advantages([[a, b]], config(method="gigpo", progpo_step=True, gamma=0.5), 0)
    assert stats["coverage_groups"] == 1
    assert close([t.advantage for t in a.turns], [1.75 - 4 / 3, 0.0])
    assert close([t.advantage for t in b.turns], [0.75 - 4 / 3, 1.5 - 4 / 3])
    # without the step level: the outcome .5 alone, returns A [.25, .5], B [.25, .5]; (act, kitchen) holds
    # [.25, .25, .5] (mean 1/3), so only B's second kitchen turn (one step nearer the end) stands out
    stats = assign_advantages([[a, b]], config(method="gigpo", gamma=0.5), 0)
    assert "coverage_groups" not in stats
    assert close([t.advantage for t in a.turns], [-1 / 12, 0.0])
    assert close([t.advantage for t in b.turns], [-1 / 12, 1 / 6])


def test_progpo_step_needs_a_method_that_uses_it():
    with pytest.raises(ValueError, match="progpo_step"):
        config(method="grpo", progpo_step=True)
