"""Example learning on the toy intent world: NLPG's confusion examples, random_examples and knn_fewshot, end to end
through nlgrad optimize (fake agent via litellm's mock_response, lexical embeddings)."""

import json

import pytest

from nlgrad.errors import ConfigError
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize
from nlgrad.policy import EntryKind, PolicyStore

from intent_world import LABELS


def optimize(settings, out, method="nlpg", **options):
    opts = {"critic": False, "examples": 6, "similarity": "lexical"} if method == "nlpg" else \
        {"embedder": "lexical", **options}
    if method == "nlpg":
        opts.update(options)
    cfg = OptimizeConfig(method=method, benchmark="banking77", iterations=2, batch=16, val=16, test_n=16,
                         gate_require_ci=False, method_options=opts)
    return run_optimize(cfg, settings, out, progress=False)


def test_nlpg_learns_contrastive_examples_from_recurring_confusions(settings, intent_data, copying_agent, tmp_path):
    outcome = optimize(settings, tmp_path / "pol", examples_cover=False, examples_partner="confused")
    assert outcome.state.history[0].accepted
    final = PolicyStore(tmp_path / "pol").load()
    examples = [e for e in final.active_entries("intent.classify") if e.kind == EntryKind.example]
    assert 2 <= len(examples) <= 6  # under the bound
    assert final.selection is not None and final.selection.kind == "examples"
    assert final.selection.examples_as == "turns"
    assert all(t.startswith("banking77/train/") for e in examples for t in e.provenance.trace_ids)
    record = json.loads((tmp_path / "pol/run/iter-0001/examples.json").read_text())
    # each pair: a failed message with its right label, next to a message of the label it was confused with
    assert record and all(r["got"] == "card_arrival" and r["support"] >= 2 and r["partner"] for r in record)
    texts = " ".join(e.text for e in examples)
    assert "Output: card_arrival" in texts and ("Output: lost_or_stolen_card" in texts
                                                 or "Output: exchange_rate" in texts)
    assert outcome.test["initial"]["score"]["mean"] == 0.25
    assert outcome.test["final"]["score"]["mean"] > 0.5


def test_nlpg_same_label_partner_shows_only_the_right_labels_where_the_agent_went_wrong(settings, intent_data,
                                                                                        copying_agent, tmp_path):
    optimize(settings, tmp_path / "pol", examples_cover=False)  # partner "same" is the default
    record = json.loads((tmp_path / "pol/run/iter-0001/examples.json").read_text())
    assert record and all(r["got"] == "card_arrival" and r["partner"] and r["partner"] != r["failed"] for r in record)
    final = PolicyStore(tmp_path / "pol").load()
    outputs = [e.text.rsplit("Output: ", 1)[1] for e in final.active_entries("intent.classify")]
    # two examples per confusion, both of the label the agent missed; none of the label it wrongly replied
    assert len(outputs) == 2 * len(record)
    assert sorted(outputs) == sorted(r["expected"] for r in record for _ in range(2))
    assert "card_arrival" not in outputs


def test_nlpg_refuses_an_unknown_examples_partner(settings, intent_data, copying_agent, tmp_path):
    with pytest.raises(ConfigError, match="examples_partner=opposite"):
        optimize(settings, tmp_path / "pol", examples_partner="opposite")


def assert_final_shows_every_label_within_the_bound(path, outcome) -> None:
    final = PolicyStore(path).load()
    replies = {e.text.rsplit("Output: ", 1)[1] for e in final.active_entries("intent.classify")}
    assert replies == set(LABELS) and len(final.active_entries("intent.classify")) <= 8
    assert outcome.test["final"]["score"]["mean"] == 1.0


def test_nlpg_covers_every_label_with_its_most_typical_message_before_the_confusions(settings, intent_data,
                                                                                      copying_agent, tmp_path):
    outcome = optimize(settings, tmp_path / "pol", examples=8)
    record = json.loads((tmp_path / "pol/run/iter-0001/examples.json").read_text())
    prototypes = [r for r in record if "prototype" in r]
    assert sorted(r["prototype"] for r in prototypes) == sorted(LABELS)
    assert all(r["task"].startswith("banking77/train/") for r in prototypes)
    assert_final_shows_every_label_within_the_bound(tmp_path / "pol", outcome)


def test_random_examples_draws_n_train_examples_shown_per_input(settings, intent_data, copying_agent, tmp_path):
    optimize(settings, tmp_path / "rand", method="random_examples", n=5)
    final = PolicyStore(tmp_path / "rand").load()
    examples = final.active_entries("intent.classify")
    assert len(examples) == 5 and all(e.kind == EntryKind.example for e in examples)
    again = tmp_path / "rand2"
    optimize(settings, again, method="random_examples", n=5)
    assert [e.text for e in PolicyStore(again).load().active_entries("intent.classify")] == [e.text for e in examples]


def test_knn_fewshot_holds_every_train_example_and_answers_every_test_task(settings, intent_data, copying_agent,
                                                                          tmp_path):
    outcome = optimize(settings, tmp_path / "knn", method="knn_fewshot")
    final = PolicyStore(tmp_path / "knn").load()
    assert len(final.active_entries("intent.classify")) == 48  # 12 per label x 4 labels
    assert outcome.test["final"]["score"]["mean"] == 1.0


def test_eval_of_a_learned_example_policy_reports_the_benchmark_metrics(settings, intent_data, copying_agent,
                                                                         tmp_path):
    from nlgrad.evaluate import EvalRequest, run_eval

    optimize(settings, tmp_path / "knn", method="knn_fewshot")
    for policy, expected in ((None, 0.25), (str(tmp_path / "knn"), 1.0)):
        result, _ = run_eval(EvalRequest(benchmark="banking77", split="test", n=8, policy=policy), settings,
                             progress=False)
        assert result.summary["metrics"] == {"accuracy": expected}
        assert json.loads((result.run_dir.path / "summary.json").read_text())["metrics"]["accuracy"] == expected


def test_nlpg_fit_cover_fills_the_bound_after_the_confusions_with_what_no_example_shows(settings, intent_data,
                                                                                      copying_agent, tmp_path):
    outcome = optimize(settings, tmp_path / "pol", examples=8, examples_cover="fit")
    record = json.loads((tmp_path / "pol/run/iter-0001/examples.json").read_text())
    kinds = ["fit" if "fit" in r else "confusion" for r in record]
    assert kinds[0] == "confusion" and "fit" in kinds and kinds == sorted(kinds)  # the confusions first
    fits = [r for r in record if "fit" in r]
    # the agent's default label is never a confusion, so only the fit gives it an example
    assert {r["fit"] for r in fits} == {"card_arrival"} and all(r["gain"] >= 1 for r in fits)
    assert all(r["task"].startswith("banking77/train/") for r in fits)
    assert_final_shows_every_label_within_the_bound(tmp_path / "pol", outcome)


def test_nlpg_refuses_an_unknown_examples_cover(settings, intent_data, copying_agent, tmp_path):
    with pytest.raises(ConfigError, match="examples_cover=nearest"):
        optimize(settings, tmp_path / "pol", examples_cover="nearest")


def test_eval_examples_k_shows_each_call_that_many_examples_and_records_it(settings, intent_data, copying_agent,
                                                                           tmp_path):
    from nlgrad.evaluate import EvalRequest, run_eval

    optimize(settings, tmp_path / "knn", method="knn_fewshot")
    shown, uncached = {}, settings.model_copy(update={"use_cache": False})  # every call reaches the agent
    for k in (None, 1):
        before = len(copying_agent)
        result, _ = run_eval(EvalRequest(benchmark="banking77", split="test", n=8, policy=str(tmp_path / "knn"),
                                         examples_k=k), uncached, progress=False)
        # each call: the system prompt, one user / assistant pair per example shown, the message
        shown[k] = {(len(messages) - 2) // 2 for messages in copying_agent[before:]}
        config = json.loads((result.run_dir.path / "config.json").read_text())
        assert config.get("examples_k") == k
    assert shown[1] == {1} and max(shown[None]) > 1
    with pytest.raises(ConfigError, match="--examples-k needs a policy") as refused:
        run_eval(EvalRequest(benchmark="banking77", split="test", n=2, examples_k=2), settings, progress=False)
    assert refused.value.field == "--policy"
    with pytest.raises(ConfigError, match="at least 1"):
        run_eval(EvalRequest(benchmark="banking77", split="test", n=2, policy=str(tmp_path / "knn"), examples_k=0),
                 settings, progress=False)
