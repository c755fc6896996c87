"""`nlgrad compare` on the toy intent world: none, NLPG's examples, the random-examples control and the KNNFewShot
reference side by side on the same test tasks (fake agent that copies its nearest demo, lexical embeddings)."""

from nlgrad.compare.harness import CompareConfig, Harness
from nlgrad.compare.results import SeedRecord
from nlgrad.policy import PolicyStore

from intent_world import LABELS


def test_compare_runs_the_intent_baselines_on_the_same_test_tasks(settings, intent_data, copying_agent, tmp_path):
    config = CompareConfig(
        benchmark="banking77", methods=["none", "nlpg", "random_examples", "knn_fewshot"], budget_rollouts=40,
        seeds=1, test_n=16, val=16, batch=16, gate_require_ci=False,
        method_options={"nlpg": {"critic": False, "examples": 6, "similarity": "lexical"},
                        "random_examples": {"n": 2, "embedder": "lexical"},
                        "knn_fewshot": {"embedder": "lexical"}})
    out = tmp_path / "cmp"
    results = Harness(config, settings, out).run()
    rows = {r["method"]: r for r in results.rows}
    # The fake agent answers the first label unless an example shows the right one: 1 of 4 labels without examples.
    assert rows["none"]["mean"] == 0.25
    assert rows["knn_fewshot"]["mean"] == 1.0  # every train message held: each test message finds its own label
    assert rows["nlpg"]["mean"] == 1.0  # an example per label, learned from the confusions
    assert 0.25 <= rows["random_examples"]["mean"] < 1.0  # 2 random examples cannot show all 4 labels
    assert rows["knn_fewshot"]["rollouts"] == 0 and rows["random_examples"]["rollouts"] == 0
    assert rows["nlpg"]["rollouts"] > 0
    held = {m: len(PolicyStore(out / m / "seed0").load().active_entries("intent.classify"))
            for m in ("random_examples", "knn_fewshot")}
    assert held == {"random_examples": 2, "knn_fewshot": 12 * len(LABELS)}
    assert len(results.test_task_ids) == 16
    for method in rows:  # paired: every row scored on the same test tasks
        record = SeedRecord.load(out / method / "seed0")
        assert record.ok and sorted(record.test) == sorted(results.test_task_ids)
