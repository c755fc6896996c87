"""report.html in a real headless browser (Debian's chromium): it renders, and every image loads.

The check script is appended to a *copy* of the report: on ``load`` it records how many ``<img>`` elements there are
and how many decoded (``complete`` and ``naturalWidth > 0``); ``--dump-dom`` prints the DOM after it ran.
Skipped when chromium is not installed (``apt-get install -y chromium``; .ci/run installs it).
"""

import re
import shutil
import subprocess

import pytest

from nlgrad.compare.harness import CompareConfig, Harness
from nlgrad.methods.base import OptimizeConfig
from nlgrad.optimize import run_optimize

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                                         "(apt-get install -y chromium)")

CHECK = """<script>
window.addEventListener("load", () => {
  const imgs = Array.from(document.images);
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0);
  document.body.setAttribute("data-check", imgs.length + ":" + ok.length + ":" +
    document.querySelectorAll("table").length + ":" + Math.round(document.body.scrollHeight));
});
</script>"""


def chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def check_in_browser(report, tmp_path) -> tuple[int, int, int, int]:
    probe = tmp_path / f"probe-{report.stem}.html"
    probe.write_text(report.read_text().replace("</body>", CHECK + "</body>"))
    done = chromium(tmp_path, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    match = re.search(r'data-check="(\d+):(\d+):(\d+):(\d+)"', done.stdout)
    assert match, f"the check script did not run; stderr tail: {done.stderr[-1500:]}"
    return tuple(int(x) for x in match.groups())


def assert_screenshot(report, tmp_path) -> None:
    shot = tmp_path / f"{report.stem}.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1800", "--hide-scrollbars", report.as_uri())
    assert shot.exists() and shot.stat().st_size > 20_000
    image = pytest.importorskip("PIL.Image").open(shot).convert("RGB")
    assert len(image.getcolors(maxcolors=1 << 16) or range(1 << 16)) > 20  # more than a blank page


def test_compare_report_renders_and_its_images_load(settings, fake_world, shout, tmp_path):
    out = tmp_path / "cmp"
    Harness(CompareConfig(benchmark="shout", methods=["none", "human", "nlpg"], budget_rollouts=10, seeds=1,
                          test_n=3, val=3, batch=2), settings, out).run()
    images, loaded, tables, height = check_in_browser(out / "report.html", tmp_path)
    assert images == 2 and loaded == 2 and tables >= 2 and height > 1000
    assert_screenshot(out / "report.html", tmp_path)


def test_run_report_renders_and_its_image_loads(settings, fake_world, shout, tmp_path):
    from nlgrad.compare.html import render_run_report

    run_optimize(OptimizeConfig(benchmark="shout", iterations=2, batch=3, val=3, test_n=2), settings,
                 tmp_path / "pol", progress=False)
    report = render_run_report(tmp_path / "pol")
    images, loaded, tables, height = check_in_browser(report, tmp_path)
    assert images == 1 and loaded == 1 and tables >= 3 and height > 800
