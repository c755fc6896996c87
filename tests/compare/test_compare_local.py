"""One short end-to-end comparison against the real embedded local models (twx/coin, tiny budget and step cap).

GEPA's reflection goes to the optimizer role's local model through nlgrad's LM; everything else is the real
executor, TextWorldExpress and llama.cpp server. Kept to a few LM calls so it fits in about two minutes.
"""

import pytest

from nlgrad.compare.harness import CompareConfig, Harness
from nlgrad.config import load_settings
from nlgrad.installed_models import with_available_local_models

pytestmark = pytest.mark.local_model


def test_compare_none_and_gepa_on_coin_with_local_models(tmp_path):
    pytest.importorskip("textworld_express")
    settings, _ = with_available_local_models(load_settings(cache_dir=tmp_path / "cache"))
    config = CompareConfig(benchmark="twx/coin", methods=["none", "gepa"], budget_rollouts=3, seeds=1, test_n=1,
                           val=1, batch=1, step_cap=3,
                           method_options={"gepa": {"reflection_minibatch_size": 1, "reflection_max_tokens": 96}})
    results = Harness(config, settings, tmp_path / "cmp").run()
    rows = {r["method"]: r for r in results.rows}
    assert rows["none"]["status"] == "ok" and rows["gepa"]["status"] == "ok", rows
    gepa = next(r for r in results.records if r.method == "gepa")
    assert gepa.rollouts >= 2 and gepa.tokens_by_role.get("agent", 0) > 0
    assert gepa.tokens_by_role.get("optimizer", 0) > 0  # GEPA's reflection call went through nlgrad's LM
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert "data:image/png;base64," in html and "twx.act" in html
