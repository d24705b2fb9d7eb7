"""``report.html``: one self-contained page (inline CSS, plots as base64 PNG, no script, no
external resource; a Content-Security-Policy forbids loading any).

Plots (matplotlib, Agg): crash and target rates with Clopper-Pearson intervals per build
(one series when the target is ``any-crash``), crash rate by the phase reached per build,
rates per device per build (every y-axis from 0%), and a launch timeline: each launch's
start coloured by outcome, one row per build, or, past :data:`TIMELINE_POINTS` launches,
the outcomes' shares in :data:`TIMELINE_BINS` bins of time. Tables: the verdict, both
builds, per-device rates, crashes that moved, each campaign's counts, the signature table
with one example stack each, and the infra errors. The template
(``kit/data/templates/report.html.j2``) is rendered by jinja2 with autoescaping on: crash
text is untrusted.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any, Sequence

import jinja2
import numpy as np
from matplotlib.figure import Figure

from .._bounded import write_atomic
from ..scenario import PHASES
from ..analysis.decide import p_text
from ..analysis.scan import OUTCOME_ORDER
from ..analysis.stats import rate
from ..analysis.summary import NO_PHASE, SHOWN_ROWS, more_text
from ..analysis.target import ANY_CRASH, tier
from .parts import Timeline, rate_text

__all__ = ["render", "write", "OUTCOME_COLOURS", "BUILD_COLOURS", "builds_figure",
           "phases_figure", "devices_figure", "timeline_figure", "TIMELINE_POINTS",
           "TIMELINE_BINS"]

#: up to this many launches the timeline shows each one; past it, binned shares
TIMELINE_POINTS = 400
TIMELINE_BINS = 120

#: Colour of each outcome on the timeline.
OUTCOME_COLOURS = {"completed": "#2e7d32", "crashed": "#c62828", "hung": "#ef6c00",
                   "app-error": "#6a1b9a", "wrong-output": "#8d6e63",
                   "infra-error": "#9e9e9e"}
#: Colours of the builds (baseline, candidate, then more campaigns) in the rate plots.
BUILD_COLOURS = ("#1565c0", "#e65100", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457")


def _png(fig: Figure | None) -> str | None:
    if fig is None:
        return None
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
    top = max([0.0, *(h for line in ax.get_lines() for h in line.get_ydata())])
    ax.set_ylim(0.0, min(100.0, max(1.0, top) * 1.08) if top < 100 else 102.0)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    handles, labels_ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=8, loc="best")


def _short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def event_title(sig: str | None, where: str) -> str:
    """A plot title that names the report's counted event first: ``race-detected rate
    per build (mechanism tier), with any crash``; plain crash rates without an event."""
    if not sig:
        return f"Crash rate {where}"
    if sig == ANY_CRASH:
        return f"{ANY_CRASH} rate {where} (failure tier)"
    return f"{sig} rate {where} ({tier(sig)} tier), with any crash"


def builds_figure(data: dict[str, Any]) -> Figure | None:
    """Crash rate (and the target's rate) per build, with intervals: one series "any
    crash" and one for the target, or the single "any-crash" series when that is the
    target."""
    camps = data["campaigns"]
    if not camps:
        return None
    comp = data.get("comparison")
    sig = data.get("signature")
    fig = Figure(figsize=(6.4, 3.4))
    ax = fig.subplots()
    for i, camp in enumerate(camps):
        target = None
        if comp is not None and i < 2:
            target = (comp["baseline"], comp["candidate"])[i]["rate"]
        elif sig and sig != ANY_CRASH:
            target = next((r for r in camp["crash_classes"] if r["key"] == sig),
                          _zero(camp["counted"]))
        if sig == ANY_CRASH:
            _errorbar(ax, i, target or camp["crashed"], "#c62828",
                      f"{ANY_CRASH} (target)" if i == 0 else None)
            continue
        _errorbar(ax, i - 0.08, camp["crashed"], "#c62828", ANY_CRASH if i == 0 else None)
        if target is not None:
            _errorbar(ax, i + 0.08, target, "#1565c0", sig if i == 0 else None, marker="s")
    _finish(ax, list(range(len(camps))), [_short(c["label"]) for c in camps],
            event_title(sig, "per build"))
    ax.set_xlim(-0.6, len(camps) - 0.4)
    return fig


def plot_builds(data: dict[str, Any]) -> str | None:
    """:func:`builds_figure` as a base64 PNG."""
    return _png(builds_figure(data))


def _zero(n: int) -> dict[str, Any]:
    """0 events in ``n`` launches, with its interval (a class that never occurred)."""
    return rate(0, n).to_dict()


def phases_figure(data: dict[str, Any]) -> Figure | None:
    """Crash rate by the last phase reached, one series per build."""
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
    return fig


def devices_figure(data: dict[str, Any]) -> Figure | None:
    """Rates per device per build (the target's in a comparison with several devices,
    else crashes)."""
    comp = data.get("comparison")
    series: list[tuple[str, dict[str, dict[str, Any]]]] = []
    title = "Crash rate per device"
    if comp is not None and comp["devices"]:
        title = event_title(comp["settings"]["signature"], "per device")
        series = [(comp["baseline"]["label"], {d["device"]: d["baseline"]
                                               for d in comp["devices"]}),
                  (comp["candidate"]["label"], {d["device"]: d["candidate"]
                                                for d in comp["devices"]})]
    elif comp is not None and all(len(comp[arm]["devices"]) == 1
                                  for arm in ("baseline", "candidate")):
        # one device each (no per-device table): that device's rate is the arm's own
        title = event_title(comp["settings"]["signature"], "per device").split(", with")[0]
        series = [(comp[arm]["label"], {comp[arm]["devices"][0]: comp[arm]["rate"]})
                  for arm in ("baseline", "candidate")]
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
    return fig


def timeline_figure(lines: Sequence[Timeline]) -> Figure | None:
    """Each launch's start (s since the first; the launch index when start times are
    missing), one row per build, coloured by outcome; past :data:`TIMELINE_POINTS`
    launches, each row is :data:`TIMELINE_BINS` bins of time whose bars stack the outcomes'
    shares (100,000 markers in a row are one solid block)."""
    lines = [t for t in lines if len(t.index)]
    if not lines:
        return None
    seconds = [np.asarray(t.seconds, dtype=float) for t in lines]
    use_time = all(np.isfinite(s).all() for s in seconds)
    xs = [s if use_time else np.asarray(t.index, dtype=float) for s, t in zip(seconds, lines)]
    x0 = min(float(x.min()) for x in xs) if use_time else 0.0
    xs = [x - x0 for x in xs]
    codes = [np.frombuffer(t.outcome, dtype=np.uint8) for t in lines]
    total = sum(len(x) for x in xs)
    fig = Figure(figsize=(6.4, 0.9 + 0.5 * len(lines)))
    ax = fig.subplots()
    event_name = next((t.event_name for t in lines if t.event_name), None)
    events = [np.frombuffer(t.event, dtype=np.uint8).astype(bool)
              if event_name and len(t.event) == len(t.index) else np.zeros(len(t.index), bool)
              for t in lines]
    if total <= TIMELINE_POINTS:
        for outcome, colour in OUTCOME_COLOURS.items():
            code = OUTCOME_ORDER.index(outcome)
            px = [x[c == code] for x, c in zip(xs, codes)]
            py = [np.full(len(p), row) for row, p in enumerate(px)]
            if any(len(p) for p in px):
                ax.scatter(np.concatenate(px), np.concatenate(py), c=colour, s=28,
                           marker="o", label=outcome, linewidths=1.5)
        if event_name:  # the verdict's own event, whatever the outcome (a race completes)
            px = [x[e] for x, e in zip(xs, events)]
            py = [np.full(len(p), row) for row, p in enumerate(px)]
            ax.scatter(np.concatenate(px), np.concatenate(py), facecolors="none",
                       edgecolors="#000000", s=110, marker="o", linewidths=1.4,
                       label=f"{event_name} (ring)")
        title = "Launch timeline"
    else:
        top = max(float(x.max()) for x in xs) or 1.0
        edges = np.linspace(0.0, top * (1 + 1e-9), TIMELINE_BINS + 1)
        width = edges[1] - edges[0]
        for row, (x, c) in enumerate(zip(xs, codes)):
            which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, TIMELINE_BINS - 1)
            counts = np.zeros((len(OUTCOME_ORDER), TIMELINE_BINS))
            np.add.at(counts, (c.astype(int), which), 1)
            shares = counts / np.maximum(counts.sum(axis=0), 1)
            bottom = np.full(TIMELINE_BINS, row - 0.4)
            for outcome, colour in OUTCOME_COLOURS.items():
                height = 0.8 * shares[OUTCOME_ORDER.index(outcome)]
                if height.any():
                    ax.bar(edges[:-1], height, width=width, bottom=bottom, align="edge",
                           color=colour, label=outcome, linewidth=0)
                bottom = bottom + height
            if event_name:  # the event's share in each bin, as a black line
                hits = np.zeros(TIMELINE_BINS)
                np.add.at(hits, which[events[row]], 1)
                share = hits / np.maximum(counts.sum(axis=0), 1)
                ax.plot(edges[:-1] + width / 2, row - 0.4 + 0.8 * share, color="#000000",
                        linewidth=1.0, label=f"{event_name} share (line)")
        title = (f"Launch timeline ({total:,} launches: outcome shares in {TIMELINE_BINS} "
                 f"bins)")
    ax.set_yticks(range(len(lines)))
    ax.set_yticklabels([_short(t.label) for t in lines], fontsize=8)
    ax.set_ylim(-0.6, len(lines) - 0.4)
    ax.set_xlabel("seconds since the first launch" if use_time else "launch index")
    if event_name:
        shown = sum(int(e.sum()) for e in events)
        title += f": {shown} launches with {event_name} ({tier(event_name)} tier) marked"
    ax.set_title(title, fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.35 - 0.05 * (3 - min(3, len(lines)))), ncol=6,
              frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return fig


def _pct(value: Any) -> str:
    return "–" if value is None else f"{value * 100:.3g}%"


def _p(value: Any) -> str:
    return "–" if value is None else p_text(value)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("kit", "data/templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters.update(rate=rate_text, pct=_pct, p=_p)
    env.globals.update(shown_rows=SHOWN_ROWS, more_text=more_text)
    return env


def render(data: dict[str, Any], lines: Sequence[Timeline]) -> str:
    """The HTML page for a report dict and the campaigns' timelines. Every plot names the
    report's counted event (the comparison's, else the campaign report's ``signature``)."""
    comp = data.get("comparison")
    sig = comp["settings"]["signature"] if comp is not None else data.get("signature")
    plots = [(title, png) for title, png in (
        (event_title(sig, "per build"), plot_builds(data)),
        ("Crash rate by phase", _png(phases_figure(data))),
        (event_title(sig, "per device").split(", with")[0] if data.get("comparison")
         else "Crash rate per device", _png(devices_figure(data))),
        (f"Launch timeline ({sig} marked)" if sig else "Launch timeline",
         _png(timeline_figure(lines)))) if png]
    return _env().get_template("report.html.j2").render(data=data, plots=plots,
                                                        comp=data.get("comparison"))


def write(data: dict[str, Any], lines: Sequence[Timeline], path: Path) -> None:
    """Write :func:`render` to ``path`` (UTF-8, :func:`kit._bounded.write_atomic`)."""
    write_atomic(path, render(data, lines).encode("utf-8"))
