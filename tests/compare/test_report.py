"""The HTML reports are self-contained (images as data URIs, no external resources) and say what happened."""

import base64
import re

import pytest

from nlgrad.compare.harness import CompareConfig, Harness
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize

PNG = b"\x89PNG\r\n\x1a\n"


def assert_self_contained(html: str) -> list[bytes]:
    """No external resource of any kind; every image is an embedded PNG. Returns the decoded images."""
    refs = re.findall(r"""\b(?:src|href)\s*=\s*["']([^"']*)["']""", html)
    assert all(ref.startswith(("data:", "#")) for ref in refs), refs
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert "http://" not in html and "https://" not in html
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert sources
    images = []
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        data = base64.b64decode(src.split(",", 1)[1])
        assert data.startswith(PNG) and len(data) > 2000
        images.append(data)
    return images


@pytest.fixture
def compare_dir(settings, fake_world, shout, tmp_path):
    out = tmp_path / "cmp"
    Harness(CompareConfig(benchmark="shout", methods=["none", "human", "nlpg", "gepa"], budget_rollouts=14,
                          seeds=2, test_n=4, val=3, batch=2), settings, out).run()
    return out


def test_compare_report_is_self_contained_with_table_plots_and_policies(compare_dir):
    html = (compare_dir / "report.html").read_text()
    assert len(assert_self_contained(html)) == 2
    assert '<table id="results">' in html and "human (reference)" in html
    for method in ("none", "human", "nlpg", "gepa"):
        assert f"<h3>{method} " in html
    assert "Always write the repeated text in UPPERCASE letters." in html and "(empty)" in html
    assert (compare_dir / "curves.png").read_bytes().startswith(PNG)
    assert (compare_dir / "test_scores.png").read_bytes().startswith(PNG)


def test_report_escapes_policy_text(settings, fake_world, shout, tmp_path):
    from nlgrad.compare.html import render_compare_report
    from nlgrad.compare.results import CompareResults, SeedRecord

    out = tmp_path / "r"
    from nlgrad.compare.plots import plot_learning_curves, plot_test_scores

    plot_learning_curves([], ["x"], out / "curves.png")
    plot_test_scores([], out / "test_scores.png")
    record = SeedRecord(method="x", seed=0, test={"t": 1.0}, policy={"a.b": "<script>alert(1)</script>"})
    results = CompareResults(settings={"benchmark": "b", "methods": ["x"]}, records=[record], rows=[])
    html = render_compare_report(results, out).read_text()
    assert "<script>alert" not in html and "&lt;script&gt;" in html


def test_run_report_for_one_optimize_run(settings, fake_world, shout, tmp_path):
    from typer.testing import CliRunner

    from nlgrad.cli import app

    run_optimize(OptimizeConfig(benchmark="shout", iterations=2, batch=4, val=4, test_n=3), settings,
                 tmp_path / "pol", progress=False)
    result = CliRunner().invoke(app, ["report", str(tmp_path / "pol" / "run")])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "pol" / "report.html").read_text()
    assert len(assert_self_contained(html)) == 1
    assert "accepted v2" in html and "<ins>" in html and "UPPERCASE" in html
    assert "v2 <span" in html and "test: initial → final" in html
    assert not list((tmp_path / "pol").glob("*.png"))  # the picture lives only inside the HTML
    custom = CliRunner().invoke(app, ["report", str(tmp_path / "pol"), "--out", str(tmp_path / "x/r.html")])
    assert custom.exit_code == 0 and (tmp_path / "x/r.html").exists()
    bad = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert bad.exit_code == 2 and "not an optimize run" in bad.output


def test_run_report_for_a_comparison_seed_folder(compare_dir):
    from nlgrad.compare.html import render_run_report

    path = render_run_report(compare_dir / "gepa" / "seed0")
    html = path.read_text()
    assert_self_contained(html)
    assert "GEPA&#39;s own selection" in html or "GEPA's own selection" in html
