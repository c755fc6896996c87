"""TIGPO's persistent transition graph, its step credit across steps, a revisit group paired with its earlier
exploration group, the history's checkpoint round trip and task revisits, on hand-computed numbers (no torch)."""

import json

from nlgrad.trainer.advantages_tigpo import (TaskHistory, enlarged_reference_advantages, revisit_slots, revisit_tasks,
                                             tigpo_advantages)
from nlgrad.trainer.transition_graph import TransitionGraph


def close(a, b, tol=1e-6):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return abs(a - b) <= tol


# step 1 (exploration of task k): s -> a -> g wins (outcome 1 on its last step), s -> b fails
STEP1 = dict(scores=[1.0, 0.0], states=[["s", "a", "g"], ["s", "b"]], step_rewards=[[0.0, 1.0], [0.0]],
             turn_steps=[[0, 1], [0]])
# step 2: both fail, s -> a -> x and s -> b: flat, so GRPO (and a graph of this step alone) has no signal
STEP2 = dict(scores=[0.0, 0.0], states=[["s", "a", "x"], ["s", "b"]], step_rewards=[[0.0, 0.0], [0.0]],
             turn_steps=[[0, 1], [0]])


def test_graph_values_by_value_iteration():
    graph = TransitionGraph()
    graph.add_episode(["s", "a", "g"], [0.0, 1.0])
    graph.add_episode(["s", "b"], [0.0])
    assert graph.edges == {("s", "a"): [1, 0.0, 1], ("a", "g"): [1, 1.0, 0], ("s", "b"): [1, 0.0, 0]}
    # gamma .5: V(a) = Q(a->g) = 1; Q(s->a) = .5 * 1 = .5, Q(s->b) = 0 -> V(s) = .25
    values = graph.values(0.5)
    assert close([values["a"], values["s"], values["g"], values["b"]], [1.0, 0.25, 0.0, 0.0])
    assert close(graph.q_value("s", "a", values, 0.5), 0.5)
    # a cycle: s -> s (a no-op step) and s -> g (reward 1, end): V(s) = (.5 V(s) + 1) / 2 -> 2/3; Q(s->s) = 1/3
    loop = TransitionGraph()
    loop.add_episode(["s", "s", "g"], [0.0, 1.0])
    values = loop.values(0.5)
    assert close(values["s"], 2 / 3, tol=1e-9) and close(loop.q_value("s", "s", values, 0.5), 1 / 3, tol=1e-9)


def test_step_credit_comes_from_the_graph_of_every_earlier_step():
    history = TaskHistory()
    out = tigpo_advantages("k", history, **STEP1, step=0, omega=1.0, gamma=0.5, normalize="mean")
    # episode (mean) [.5, -.5]; credit Q - V: s->a .5 - .25, a->g 1 - 1, s->b 0 - .25
    assert close(out, [[0.75, 0.5], [-0.75]])
    out = tigpo_advantages("k", history, **STEP2, step=1, omega=1.0, gamma=0.5, normalize="mean")
    # graph now s->a [2, 0, 2], a->g [1, 1, 0], a->x [1, 0, 0], s->b [2, 0, 0]: V(a) = .5, Q(s->a) = .25,
    # V(s) = (2 * .25 + 2 * 0) / 4 = .125 -> s->a +.125, a->x 0 - .5, s->b -.125; the flat group's episode credit is 0
    assert close(out, [[0.125, -0.5], [-0.125]])
    # the same step with no history: this step's transitions alone carry no reward, so no credit at all
    assert close(tigpo_advantages("k", TaskHistory(), **STEP2, step=1, gamma=0.5), [[0.0, 0.0], [0.0]])
    # graphs are per task
    assert set(history.graphs) == {"k"} and history.exploration_returns("other") is None


def test_a_revisit_group_is_paired_with_its_earlier_exploration_group():
    assert close(enlarged_reference_advantages([1.0, 1.0], [0.0, 0.0], "mean"), [0.5, 0.5])
    assert close(enlarged_reference_advantages([1.0, 1.0], [0.0, 0.0], "std"), [1.0, 1.0], tol=1e-5)
    history = TaskHistory()
    tigpo_advantages("k", history, **STEP1, step=0, gamma=0.5)
    assert history.explorations == {"k": {"step": 0, "returns": [1.0, 0.0]}}
    out = tigpo_advantages("k", history, **STEP2, revisit=True, step=3, omega=1.0, gamma=0.5, normalize="mean")
    # enlarged reference [0, 0] + [1, 0]: mean .25 -> episode credit -.25 each; plus the graph credit above
    assert close(out, [[-0.125, -0.75], [-0.375]])
    assert history.explorations["k"]["step"] == 0  # a revisit does not replace the exploration record
    # policy improvement on the same task: an all-won revisit of an all-failed exploration is pushed up
    history = TaskHistory()
    flat = dict(states=[["s"], ["s"]], step_rewards=[[0.0], [0.0]], turn_steps=[[0], [0]])
    tigpo_advantages("t", history, scores=[0.0, 0.0], **flat, step=0)
    assert close(tigpo_advantages("t", history, scores=[1.0, 1.0], **flat, revisit=True, step=1), [[0.5], [0.5]])
    # not a revisit: the group is its own reference (flat: no signal) and becomes the new exploration record
    assert close(tigpo_advantages("t", history, scores=[1.0, 1.0], **flat, step=2), [[0.0], [0.0]])
    assert history.explorations["t"] == {"step": 2, "returns": [1.0, 1.0]}


def test_history_round_trips_through_json():
    history = TaskHistory()
    tigpo_advantages("k", history, **STEP1, step=0, gamma=0.5)
    copy = TaskHistory.from_dict(json.loads(json.dumps(history.to_dict())))
    assert copy.to_dict() == history.to_dict()
    assert close(tigpo_advantages("k", copy, **STEP2, step=1, gamma=0.5, normalize="mean"), [[0.125, -0.5], [-0.125]])
    # a checkpoint written before the graph (anchor statistics only) starts an empty history
    assert TaskHistory.from_dict({"anchors": {"k": {"a": [1, 1.0, 1.0]}}}).to_dict() == {"graphs": {},
                                                                                       "explorations": {}}


def test_revisits_take_a_share_of_slots_from_explored_tasks():
    assert [revisit_slots(s, 4) for s in (0.0, 0.25, 0.5, 1.0)] == [0, 1, 2, 3]
    assert revisit_slots(0.5, 1) == 0
    history = TaskHistory()
    for task in ("t1", "t2", "t3"):
        history.record_exploration(task, 0, [0.0, 1.0])
    history.graph("t4")  # a graph without an exploration group is not revisited
    picked = revisit_tasks(history, ["t1", "t9"], 2, seed=0, step=3)
    assert sorted(picked) == ["t2", "t3"]  # only explored tasks, never one of the fresh draw
    assert revisit_tasks(history, ["t1"], 1, seed=0, step=3) == revisit_tasks(history, ["t1"], 1, seed=0, step=3)
    assert revisit_tasks(history, ["t1"], 0, seed=0, step=3) == []
    assert revisit_tasks(TaskHistory(), [], 2, seed=0, step=0) == []
