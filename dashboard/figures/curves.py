"""Learning curves as researchers read them: smoothing, a rolling median, reward / entropy / learning-rate
panels, three x axes, and several seeds drawn as a mean with a bootstrap confidence band.

Smoothing is TensorBoard's debiased exponential moving average; the rolling median is a
trailing window, robust to the occasional very slow sampled placement, so a sampled runtime
that drifts upwards shows as a rising line even when the best-so-far stays flat. The band
over seeds is a percentile bootstrap of the mean (Efron & Tibshirani 1993, ch. 13).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.theme import run_colors

__all__ = ["CURVE_X", "bootstrap_band", "ema", "learning_curves", "rolling_median", "thin_rows"]

#: x axes of the learning curves: label → learning-curve column (CONTRACTS §6).
CURVE_X = {"episode": "episode", "placements evaluated": "placements_evaluated", "wall time (s)": "wall_time"}
_PANELS = (("runtime (ms)", "sampled_runtime"), ("reward", "reward"), ("entropy", "entropy"),
           ("learning rate", "learning_rate"))


def thin_rows(n: int, max_points: int | None) -> np.ndarray:
    """Indices of at most about ``max_points`` of ``n`` rows: every k-th row, always with the last one."""
    if max_points is None or n <= max_points:
        return np.arange(n)
    step = -(-n // max(max_points, 1))  # ceil(n / max_points)
    return np.unique(np.r_[np.arange(0, n, step), n - 1])


def ema(values: Sequence[float] | np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's smoothing: s_t = w·s_{t−1} + (1 − w)·x_t from s_0 = 0, divided by 1 − w^t (debiased).

    ``weight`` 0 returns the values; NaNs are skipped (the previous smoothed value carries on).
    """
    x = np.asarray(values, dtype=float)
    if not 0.0 <= weight < 1.0:
        raise ValueError("smoothing weight must be in [0, 1)")
    out = np.empty_like(x)
    acc, n = 0.0, 0
    for i, v in enumerate(x):
        if np.isfinite(v):
            acc = weight * acc + (1.0 - weight) * v
            n += 1
        out[i] = acc / (1.0 - weight ** n) if n else np.nan
    return out


def rolling_median(values: Sequence[float] | np.ndarray, window: int) -> np.ndarray:
    """Median of the last ``window`` values at each point (fewer at the start)."""
    x = np.asarray(values, dtype=float)
    if window < 1:
        raise ValueError("window must be at least 1")
    if len(x) == 0:
        return x
    pad = np.r_[np.full(window - 1, np.nan), x]
    windows = np.lib.stride_tricks.sliding_window_view(pad, window)
    return np.nanmedian(windows, axis=1)


def bootstrap_band(runs: Sequence[Sequence[float]], *, confidence: float = 0.95, resamples: int = 1000,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over runs (seeds) at each step and a percentile-bootstrap confidence band of that mean.

    Runs are cut to the shortest; with one run the band is the run itself.
    """
    length = min(len(r) for r in runs)
    m = np.asarray([np.asarray(r, dtype=float)[:length] for r in runs])
    mean = m.mean(axis=0)
    if len(m) == 1:
        return mean, mean.copy(), mean.copy()
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(m), size=(resamples, len(m)))
    means = m[picks].mean(axis=1)  # resamples × steps
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha], axis=0)
    return mean, lo, hi


def _column(curve: Mapping[str, Sequence], name: str) -> np.ndarray | None:
    values = curve.get(name)
    if values is None or len(values) == 0:
        return None
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return None


def _relative_runtime(curve: Mapping[str, Sequence]) -> np.ndarray | None:
    """Sampled runtime over the best runtime ever sampled on the same graph (multi-graph runs)."""
    runtime = _column(curve, "sampled_runtime")
    graphs = curve.get("graph")
    if runtime is None or graphs is None:
        return runtime
    keys = np.asarray([str(g) for g in graphs], dtype=object)
    out = runtime.copy()
    for g in set(keys.tolist()):
        sel = keys == g
        best = np.nanmin(runtime[sel])
        out[sel] = runtime[sel] / best if best > 0 else np.nan
    return out


def _is_multi_graph(curve: Mapping[str, Sequence]) -> bool:
    graphs = curve.get("graph")
    return graphs is not None and len({str(g) for g in graphs}) > 1


def learning_curves(curves: Mapping[str, Mapping[str, Sequence] | Sequence[Mapping[str, Sequence]]], *,
                    x: str = "episode", smoothing: float = 0.6, median_window: int = 25,
                    max_points: int | None = None, title: str = "Learning curves",
                    placers: Mapping[str, str | None] | None = None,
                    uniform_entropy: float | None = None) -> go.Figure:
    """Four panels — sampled runtime, reward, entropy, learning rate — against ``x`` (a :data:`CURVE_X` key).

    ``curves``: name → one learning curve (columns of CONTRACTS §6), or name → a list of curves
    (one per seed), drawn as the mean with a 95 % bootstrap band. In the runtime panel: the
    sampled runtime faint, its smoothed line (``smoothing``, TensorBoard's weight), its rolling
    median dotted, and the best runtime so far. A curve over several graphs plots the sampled
    runtime relative to the best seen on the same graph (a "best" across graphs would jump).
    Panels without data for any curve stay empty. ``max_points`` thins long curves for display.

    Each name has its placer's colour (``placers``: name → placer, e.g. from
    :func:`dashboard.data.learning.seed_groups`; else the name tells, :func:`run_colors`), the same as in
    any other figure; several runs of one placer take its shades, and every kind of line of a name has its
    legend entry (one entry toggles that line in all four panels). Axes print numbers plainly (``0.0001``,
    not ``100µ``).

    The entropy axis runs from 0 to the largest entropy drawn or ``uniform_entropy`` (the uniform policy's, nats,
    :mod:`policies.rl.core.health`; drawn as a dotted line), whichever is higher: a policy that stays near uniform
    reads as flat, never as a collapse magnified by an axis fitted to a 0.3 % change.
    """
    from plotly.subplots import make_subplots

    if x not in CURVE_X:
        raise ValueError(f"x must be one of {', '.join(CURVE_X)}")
    any_multi = any(_is_multi_graph(c) for cs in curves.values() for c in (cs if isinstance(cs, list) else [cs]))
    runtime_title = "runtime (relative to each graph's best)" if any_multi else "runtime (ms)"
    fig = make_subplots(rows=2, cols=2, subplot_titles=(runtime_title, "reward", "entropy", "learning rate"),
                        horizontal_spacing=0.08, vertical_spacing=0.14)
    colors = run_colors(curves, placers)
    legend: set[str] = set()
    entropy_top = uniform_entropy if uniform_entropy is not None and np.isfinite(uniform_entropy) else 0.0
    for name, item in curves.items():
        seeds = item if isinstance(item, list) else [item]
        xs = _column(seeds[0], CURVE_X[x])
        if xs is None:
            xs = np.arange(1, len(seeds[0].get("episode", [])) + 1, dtype=float)
        for panel, (_label, column) in enumerate(_PANELS):
            per_seed = [v for v in (_panel_values(c, column, any_multi) for c in seeds) if v is not None]
            if not per_seed:
                continue
            length = min(len(v) for v in per_seed)
            if column == "entropy":
                entropy_top = max(entropy_top, *(float(np.nanmax(v, initial=0.0)) for v in per_seed))
            keep = thin_rows(min(length, len(xs)), max_points)
            line = _Line(fig, legend, name, colors[name], xs[keep], keep, *divmod(panel, 2))
            if len(per_seed) > 1:
                line.seeds(per_seed, column, smoothing)
                continue
            v = per_seed[0][:length]
            if column == "sampled_runtime":
                best = None if any_multi else _column(seeds[0], "best_runtime")
                line.runtime_extras(v, None if best is None else best[:length] * 1e3, median_window)
            line.add(v if column == "learning_rate" else ema(v, smoothing), name if panel == 0 else f"{name} {column}",
                     name)
    if uniform_entropy is not None and np.isfinite(uniform_entropy):
        fig.add_hline(y=uniform_entropy, line_dash="dot", line_color="#888888", row=2, col=1,
                      annotation_text=f"uniform {uniform_entropy:.3g}", annotation_position="bottom right")
    if entropy_top > 0:
        fig.update_yaxes(range=[0.0, entropy_top * 1.05], row=2, col=1)
    fig.update_xaxes(title_text=x, row=2)
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True, tickformat="~g")  # plain numbers: 0.0001, never 100µ
    fig.update_layout(title=title + (f" (smoothing {smoothing:g})" if smoothing else ""), height=640,
                      margin={"l": 10, "r": 10, "t": 80, "b": 40}, legend={"orientation": "h", "y": -0.12})
    return fig


def _panel_values(curve: Mapping[str, Sequence], column: str, any_multi: bool) -> np.ndarray | None:
    """One curve's values for a panel: runtimes in ms (relative to each graph's best over several graphs)."""
    if column != "sampled_runtime":
        return _column(curve, column)
    if any_multi:
        return _relative_runtime(curve)
    v = _column(curve, column)
    return None if v is None else v * 1e3


class _Line:
    """Adds one name's lines to one panel; the first line of each legend group gets the legend entry."""

    def __init__(self, fig: go.Figure, legend: set[str], name: str, color: str, xk: np.ndarray, keep: np.ndarray,
                 row: int, col: int) -> None:
        self.fig, self.legend, self.name, self.color = fig, legend, name, color
        self.xk, self.keep, self.row, self.col = xk, keep, row + 1, col + 1

    def add(self, y: np.ndarray, label: str, group: str, *, x: np.ndarray | None = None, **style: Any) -> None:
        """A line of ``y`` (all rows; thinned here unless ``x`` is given with ``y`` to match)."""
        line = {"color": self.color, "width": 2.5, **style.pop("line", {})}
        self.fig.add_trace(go.Scatter(x=self.xk if x is None else x, y=y[self.keep] if x is None else y, mode="lines",
                                      line=line, name=label, legendgroup=group, showlegend=group not in self.legend,
                                      **style), row=self.row, col=self.col)
        self.legend.add(group)

    def seeds(self, per_seed: list[np.ndarray], column: str, smoothing: float) -> None:
        """The mean over seeds and its 95 % bootstrap band."""
        smoothed = [ema(v, smoothing) if column != "learning_rate" else v for v in per_seed]
        mean, lo, hi = bootstrap_band(smoothed)
        band = f"{self.name} 95% CI"
        self.add(np.r_[hi[self.keep], lo[self.keep][::-1]], band, band, x=np.r_[self.xk, self.xk[::-1]],
                 fill="toself", line={"width": 0}, fillcolor=self.color, opacity=0.2, hoverinfo="skip")
        label = f"{self.name} mean of {len(per_seed)} seeds"
        self.add(mean, label if self.row == self.col == 1 else f"{label} {column}", self.name)

    def runtime_extras(self, v: np.ndarray, best: np.ndarray | None, median_window: int) -> None:
        """The sampled runtime (faint), its rolling median (dotted) and the best so far (dashed)."""
        self.add(v, f"{self.name} sampled", f"{self.name} sampled", line={"width": 1}, opacity=0.3)
        self.add(rolling_median(v, median_window), f"{self.name} rolling median ({median_window})",
                 f"{self.name} rolling median", line={"width": 1.5, "dash": "dot"})
        if best is not None:
            self.add(best, f"{self.name} best", f"{self.name} best", line={"width": 1.5, "dash": "dash"})
