"""Banking77 and CLINC150 on the shared data: loading, exact labels, the metric's tags, summary metrics, floors,
label reading, and the constrained reply the intent programs ask for."""

import pytest

from nlgrad.errors import BenchmarkError
from nlgrad.programs.floors import MajorityLabelFloor, NearestLabelFloor
from nlgrad.programs.intent_classify import CLASSIFY, IntentClassifyProgram
from nlgrad.programs.intent_groups import BANKING77_GROUPS, label_groups
from nlgrad.programs.intent_labels import read_label
from nlgrad.programs.intent_route import GROUP, LABEL, IntentRouteProgram
from nlgrad.runtime.context import RunContext
from nlgrad.runtime.registry import load_benchmark
from nlgrad.runtime.trace import Trace


@pytest.fixture(scope="module")
def banking():
    return load_benchmark("banking77")


@pytest.fixture(scope="module")
def clinc():
    return load_benchmark("clinc150")


def test_banking77_splits_and_exact_labels(banking):
    assert [len(banking.tasks(s)) for s in ("train", "dev", "test")] == [8003, 2000, 2310]
    assert len(banking.labels) == 77
    assert "Refund_not_showing_up" in banking.labels and "reverted_card_payment?" in banking.labels
    task = banking.tasks("dev", 1)[0]
    assert task.id.startswith("banking77/dev/") and set(task.inputs) == {"message"}


def test_metric_is_case_insensitive_and_tags_confusions(banking):
    task = next(t for t in banking.tasks("train") if t.gold == "Refund_not_showing_up")
    assert banking.metric(task, "refund_not_showing_up").success
    assert banking.metric(task, {"label": "REFUND_NOT_SHOWING_UP", "exact": True}).details["tags"] == []
    wrong = banking.metric(task, {"label": "request_refund", "exact": True})
    assert not wrong.success and wrong.details["tags"] == ["confused:Refund_not_showing_up->request_refund"]
    mapped = banking.metric(task, {"label": "request_refund", "exact": False})
    assert "invalid_label" in mapped.details["tags"] and "nearest" in mapped.feedback
    invented = banking.metric(task, "refund_pending")
    assert invented.details["predicted"] is None and "invalid_label" in invented.details["tags"]


def test_clinc150_out_of_scope_tags_and_summary_metrics(clinc):
    assert len(clinc.labels) == 151 and clinc.labels[-1] == "oos"
    oos = next(t for t in clinc.tasks("dev") if t.gold == "oos")
    inscope = next(t for t in clinc.tasks("dev") if t.gold != "oos")
    assert "missed_oos" in clinc.metric(oos, "balance").details["tags"]
    assert "false_oos" in clinc.metric(inscope, "oos").details["tags"]
    metrics = clinc.summary_metrics([("oos", "oos"), ("oos", "balance"), ("balance", "balance"), ("pay_bill", "oos")])
    assert metrics == {"accuracy": 0.5, "in_scope_accuracy": 0.5, "oos_recall": 0.5}


def test_missing_data_names_the_folder_and_variable(tmp_path):
    with pytest.raises(BenchmarkError, match="NLGRAD_BANKING77_DIR"):
        _ = load_benchmark("banking77", data_dir=tmp_path).tasks("dev")


def test_a_label_outside_the_label_file_is_refused(tmp_path):
    import json

    (tmp_path / "labels.json").write_text(json.dumps(["a", "b"]))
    for split in ("train", "dev", "test"):
        (tmp_path / f"{split}.jsonl").write_text(json.dumps({"id": "1", "text": "hi", "label": "c"}) + "\n")
    with pytest.raises(BenchmarkError, match="'c'.*labels.json"):
        load_benchmark("banking77", data_dir=tmp_path).tasks("train")


def test_read_label_exact_json_wrapped_and_nearest():
    labels = ["card_arrival", "reverted_card_payment?", "Refund_not_showing_up"]
    assert read_label('"card_arrival"', labels) == {"label": "card_arrival", "exact": True, "reply": '"card_arrival"'}
    assert read_label("Intent: refund_not_showing_up.", labels)["label"] == "Refund_not_showing_up"
    assert read_label("I think it is reverted_card_payment? here", labels)["exact"]
    nearest = read_label("card_arival", labels)
    assert nearest["label"] == "card_arrival" and not nearest["exact"]


def test_banking77_groups_hold_every_label_once(banking, clinc):
    assert label_groups(banking) is BANKING77_GROUPS
    assert sorted(x for g in BANKING77_GROUPS.values() for x in g) == sorted(banking.labels)
    groups = label_groups(clinc)
    assert len(groups) == 11 and groups["oos"] == ["oos"]


def test_nearest_label_floor_beats_the_majority_floor(banking):
    tasks = banking.tasks("dev", 200)
    nearest, majority = NearestLabelFloor(banking), MajorityLabelFloor(banking)
    near = sum(banking.metric(t, nearest.run(t, None)).score for t in tasks) / len(tasks)
    major = sum(banking.metric(t, majority.run(t, None)).score for t in tasks) / len(tasks)
    assert major < 0.05 and near > 0.4


class RecordingLM:
    """Replies with a fixed text and records each call's keyword arguments."""

    def __init__(self, reply: str, constrains: bool = True):
        self.reply, self.constrains, self.calls = reply, constrains, []

    def model_for(self, role):
        return "local/test"

    def constrains_json(self, role):
        return self.constrains

    def complete(self, role, messages, **kwargs):
        from nlgrad.lm.client import Completion

        self.calls.append({"messages": messages, **kwargs})
        return Completion(text=self.reply, model="local/test")


def test_classify_sends_the_label_set_as_a_grammar_only_where_the_server_takes_one(banking):
    program = IntentClassifyProgram(banking)
    task = banking.tasks("dev", 1)[0]
    for constrains in (True, False):
        lm = RecordingLM('"card_arrival"', constrains)
        out = program.run(task, RunContext(task=task, lm=lm, trace=Trace(task.id)))
        assert out["label"] == "card_arrival" and out["exact"]
        sent = lm.calls[0].get("response_format")
        if constrains:
            assert sent["schema"]["enum"] == banking.labels
        else:
            assert sent is None
        system, user = lm.calls[0]["messages"][0]["content"], lm.calls[0]["messages"][-1]["content"]
        assert "reverted_card_payment?" in system and user.strip() == task.inputs["message"]
    assert program.reference_outputs(task) == {CLASSIFY: task.gold}


def test_route_asks_the_area_then_the_intent_among_its_labels(banking):
    program = IntentRouteProgram(banking)
    task = next(t for t in banking.tasks("dev") if t.gold == "exchange_charge")
    lm = RecordingLM('"exchange_rates"')
    trace = Trace(task.id)
    out = program.run(task, RunContext(task=task, lm=lm, trace=trace))
    assert [n["route"] for n in trace.module_calls()] == [GROUP, LABEL]
    assert lm.calls[1]["response_format"]["schema"]["enum"] == BANKING77_GROUPS["exchange_rates"]
    assert out["group"] == "exchange_rates" and not out["exact"]  # "exchange_rates" is no label: nearest taken
    assert program.reference_outputs(task) == {GROUP: "exchange_rates", LABEL: "exchange_charge"}


def test_a_constrained_module_shows_its_examples_replies_as_it_must_reply(banking):
    module = IntentClassifyProgram(banking).classify
    messages = module.render("", {"message": "where is my card"}, demos=[("card not here yet", "card_arrival")])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == '"card_arrival"'  # the JSON string the grammar makes it reply
    assert read_label(messages[2]["content"], banking.labels)["exact"]
