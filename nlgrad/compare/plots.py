"""PNG pictures (matplotlib, Agg backend): learning curves and test scores with their confidence intervals.

matplotlib is an optional dependency (extra ``report``); it is imported inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from nlgrad.errors import ConfigError


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ConfigError("plots need matplotlib: pip install 'nlgrad[report]'", field="matplotlib",
                          value="missing") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _colors(methods: list[str]) -> dict[str, Any]:
    plt = _pyplot()
    cycle = plt.get_cmap("tab10")
    return {m: cycle(i % 10) for i, m in enumerate(methods)}


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def _plot(path: Path, title: str, height: float, draw: Callable[[Any], bool], empty: str) -> Path:
    """One 7.5-inch-wide PNG: ``draw(ax)`` draws and says whether there was anything to draw (else ``empty`` is
    written across the axes); the title goes on top."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, height), dpi=110)
    if not draw(ax):
        _empty(ax, empty)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _score_axes(ax, xlabel: str) -> None:
    """Validation score (0..1) against ``xlabel``, with a grid and a legend."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel("validation score")
    ax.set_ylim(-0.03, 1.03)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)


def plot_learning_curves(records, methods: list[str], path: Path, *, title: str = "validation score") -> Path:
    """Validation score after each iteration vs cumulative rollouts; one colour per method, one line per seed."""
    colors = _colors(methods)

    def draw(ax) -> bool:
        drawn = False
        for method in methods:
            labelled = False
            for record in (r for r in records if r.method == method and r.curve):
                xs, ys = zip(*record.curve)
                ax.step(xs, ys, where="post", color=colors[method], alpha=0.85, linewidth=1.6,
                        label=None if labelled else method, marker="o", markersize=3)
                labelled = drawn = True
        if drawn:
            _score_axes(ax, "rollouts (cumulative, optimizer's own)")
        return drawn

    return _plot(path, title, 4.2, draw, "no learning curve: no method ran a validation gate")


def plot_test_scores(rows: list[dict[str, Any]], path: Path, *, title: str = "test score") -> Path:
    """Horizontal bars: each method's mean test score with its 95% CI; the reference baseline is hatched."""
    shown = [r for r in rows if r.get("mean") is not None]
    colors = _colors([r["method"] for r in rows])

    def draw(ax) -> bool:
        if not shown:
            return False
        ys = list(range(len(shown)))[::-1]
        means = [r["mean"] for r in shown]
        errs = [[r["mean"] - r["ci95"][0] for r in shown], [r["ci95"][1] - r["mean"] for r in shown]]
        bars = ax.barh(ys, means, xerr=errs, color=[colors[r["method"]] for r in shown], capsize=3, alpha=0.85)
        for bar, row in zip(bars, shown):
            if row.get("reference"):
                bar.set_hatch("//")
        ax.set_yticks(ys, [r["method"] for r in shown])
        ax.set_xlim(0, 1.02)
        ax.set_xlabel("mean test score (95% bootstrap CI over tasks)")
        ax.grid(axis="x", alpha=0.3)
        return True

    return _plot(path, title, 0.5 * max(3, len(shown)) + 1.0, draw, "no method has test scores yet")


def plot_run_curve(points: list[dict[str, Any]], path: Path, *, title: str = "validation score") -> Path:
    """One optimize run: the current policy's validation score and each candidate's, against iterations."""
    gated = [p for p in points if p.get("candidate") is not None]

    def draw(ax) -> bool:
        if not gated:
            return False
        from matplotlib.ticker import MaxNLocator

        ax.step([p["iteration"] for p in points], [p["current"] for p in points], where="post", color="tab:blue",
                label="policy after the iteration", linewidth=1.8)
        acc = [p for p in gated if p["accepted"]]
        rej = [p for p in gated if not p["accepted"]]
        ax.scatter([p["iteration"] for p in acc], [p["candidate"] for p in acc], color="tab:green", marker="^",
                   label="accepted candidate", zorder=3)
        ax.scatter([p["iteration"] for p in rej], [p["candidate"] for p in rej], color="tab:red", marker="x",
                   label="rejected candidate", zorder=3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _score_axes(ax, "iteration")
        return True

    return _plot(path, title, 4.0, draw, "no validation gate ran in this run")
