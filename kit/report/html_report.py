"""``report.html``: one self-contained page (inline CSS, plots as base64 PNG, no script, no
external resource; a Content-Security-Policy forbids loading any).

Plots (matplotlib, Agg): crash and target rates with Clopper-Pearson intervals per build,
crash rate by the phase reached per build, rates per device per build, and a launch timeline
(each launch's start, coloured by outcome, one row per build). Tables: the verdict, both
builds, per-device rates, crashes that moved, each campaign's counts, the signature table
with one example stack each, and the infra errors. The template
(``kit/data/templates/report.html.j2``) is rendered by jinja2 with autoescaping on: crash
text is untrusted.
"""

from __future__ import annotations

import base64
import datetime as _dt
import io
from pathlib import Path
from typing import Any, Sequence

import jinja2
from matplotlib.figure import Figure

from ..scenario import PHASES
from ..analysis.stats import rate
from ..analysis.summary import NO_PHASE
from . import TimelinePoint, rate_text

__all__ = ["render", "write", "OUTCOME_COLOURS", "BUILD_COLOURS"]

#: Colour of each outcome on the timeline.
OUTCOME_COLOURS = {"completed": "#2e7d32", "crashed": "#c62828", "hung": "#ef6c00",
                   "app-error": "#6a1b9a", "wrong-output": "#8d6e63",
                   "infra-error": "#9e9e9e"}
#: Colours of the builds (baseline, candidate, then more campaigns) in the rate plots.
BUILD_COLOURS = ("#1565c0", "#e65100", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457")


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _errorbar(ax: Any, x: float, r: dict[str, Any], colour: str, label: str | None,
              marker: str = "o") -> None:
    if not r.get("n"):
        return
    value = r["count"] / r["n"]
    ax.errorbar([x], [value * 100], yerr=[[max(0.0, value - r["low"]) * 100],
                                         [max(0.0, r["high"] - value) * 100]],
                fmt=marker, color=colour, capsize=4, markersize=7, label=label)


def _finish(ax: Any, ticks: list[float], labels: list[str], title: str) -> None:
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, rotation=20 if len(labels) > 4 else 0, ha="right"
                       if len(labels) > 4 else "center", fontsize=8)
    ax.set_ylabel("% of counted launches (95% CI)")
    ax.set_ylim(bottom=-2)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    handles, labels_ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=8, loc="best")


def _short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def plot_builds(data: dict[str, Any]) -> str | None:
    """Crash rate (and the target's rate) per build, with intervals; base64 PNG."""
    camps = data["campaigns"]
    if not camps:
        return None
    comp = data.get("comparison")
    sig = data.get("signature")
    fig = Figure(figsize=(6.4, 3.4))
    ax = fig.subplots()
    for i, camp in enumerate(camps):
        _errorbar(ax, i - 0.08, camp["crashed"], "#c62828", "any crash" if i == 0 else None)
        target = None
        if comp is not None and i < 2:
            target = (comp["baseline"], comp["candidate"])[i]["rate"]
        elif sig:
            target = next((r for r in camp["crash_classes"] if r["key"] == sig),
                          _zero(camp["counted"]))
        if target is not None:
            _errorbar(ax, i + 0.08, target, "#1565c0", sig if i == 0 else None, marker="s")
    _finish(ax, list(range(len(camps))), [_short(c["label"]) for c in camps],
            "Crash rates per build")
    ax.set_xlim(-0.6, len(camps) - 0.4)
    return _png(fig)


def _zero(n: int) -> dict[str, Any]:
    """0 events in ``n`` launches, with its interval (a class that never occurred)."""
    return rate(0, n).to_dict()


def plot_phases(data: dict[str, Any]) -> str | None:
    """Crash rate by the last phase reached, one series per build; base64 PNG."""
    camps = data["campaigns"]
    keys = [p for p in (*PHASES, NO_PHASE)
            if any(r["key"] == p for c in camps for r in c["crash_phases"])]
    if not keys:
        return None
    fig = Figure(figsize=(6.4, 3.4))
    ax = fig.subplots()
    width = 0.5 / max(1, len(camps))
    for i, camp in enumerate(camps):
        rows = {r["key"]: r for r in camp["crash_phases"]}
        for j, key in enumerate(keys):
            row = rows.get(key) or _zero(camp["counted"])
            _errorbar(ax, j - 0.25 + width * (i + 0.5), row,
                      BUILD_COLOURS[i % len(BUILD_COLOURS)],
                      _short(camp["label"]) if j == 0 else None)
    _finish(ax, list(range(len(keys))), keys, "Crash rate by the last phase reached")
    ax.set_xlim(-0.6, len(keys) - 0.4)
    return _png(fig)


def plot_devices(data: dict[str, Any]) -> str | None:
    """Rates per device per build (the target's in a comparison with several devices,
    else crashes); base64 PNG."""
    comp = data.get("comparison")
    series: list[tuple[str, dict[str, dict[str, Any]]]] = []
    title = "Crash rate per device"
    if comp is not None and comp["devices"]:
        title = f"{comp['settings']['signature']} rate per device"
        series = [(comp["baseline"]["label"], {d["device"]: d["baseline"]
                                               for d in comp["devices"]}),
                  (comp["candidate"]["label"], {d["device"]: d["candidate"]
                                                for d in comp["devices"]})]
    else:
        series = [(c["label"], {d["device"]: d["crashed"] for d in c["devices"]})
                  for c in data["campaigns"]]
    devices = sorted({d for _, rows in series for d in rows})
    if not devices:
        return None
    fig = Figure(figsize=(6.4, 3.4))
    ax = fig.subplots()
    width = 0.5 / max(1, len(series))
    for i, (label, rows) in enumerate(series):
        for j, device in enumerate(devices):
            if device in rows:
                _errorbar(ax, j - 0.25 + width * (i + 0.5), rows[device],
                          BUILD_COLOURS[i % len(BUILD_COLOURS)],
                          _short(label) if not any(d in rows for d in devices[:j]) else None)
    _finish(ax, list(range(len(devices))), [_short(d, 22) for d in devices], title)
    ax.set_xlim(-0.6, len(devices) - 0.4)
    return _png(fig)


def _seconds(stamp: str) -> float | None:
    try:
        return _dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


def plot_timeline(points: Sequence[TimelinePoint]) -> str | None:
    """Each launch's start time (s since the first), one row per build, coloured by
    outcome (launch index when start times are missing); base64 PNG."""
    if not points:
        return None
    labels = list(dict.fromkeys(p.label for p in points))
    times = [_seconds(p.started_at) for p in points]
    use_time = all(t is not None for t in times)
    t0 = min(t for t in times if t is not None) if use_time else 0.0
    fig = Figure(figsize=(6.4, 0.9 + 0.5 * len(labels)))
    ax = fig.subplots()
    for outcome, colour in OUTCOME_COLOURS.items():
        xs = [(t - t0) if use_time else p.index  # type: ignore[operator]
              for p, t in zip(points, times) if p.outcome == outcome]
        ys = [labels.index(p.label) for p in points if p.outcome == outcome]
        if xs:
            ax.scatter(xs, ys, c=colour, s=28, marker="|" if len(points) > 400 else "o",
                       label=outcome, linewidths=1.5)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels([_short(x) for x in labels], fontsize=8)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.set_xlabel("seconds since the first launch" if use_time else "launch index")
    ax.set_title("Launch timeline", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.35 - 0.05 * (
        3 - min(3, len(labels)))), ncol=6, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def _pct(value: Any) -> str:
    return "–" if value is None else f"{value * 100:.3g}%"


def _p(value: Any) -> str:
    return "–" if value is None else f"{value:.2g}"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("kit", "data/templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters.update(rate=rate_text, pct=_pct, p=_p)
    return env


def render(data: dict[str, Any], points: Sequence[TimelinePoint]) -> str:
    """The HTML page for a report dict and the launches' timeline points."""
    plots = [(title, png) for title, png in (
        ("Rates per build", plot_builds(data)),
        ("Crash rate by phase", plot_phases(data)),
        ("Rates per device", plot_devices(data)),
        ("Launch timeline", plot_timeline(points))) if png]
    return _env().get_template("report.html.j2").render(data=data, plots=plots,
                                                        comp=data.get("comparison"))


def write(data: dict[str, Any], points: Sequence[TimelinePoint], path: Path) -> None:
    """Write :func:`render` to ``path`` (UTF-8)."""
    path.write_text(render(data, points), encoding="utf-8")
