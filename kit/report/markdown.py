"""``summary.md``: a short Markdown summary fit for a pull-request comment.

Crash text is untrusted: every value from a campaign is escaped so it cannot add links,
images, HTML or table cells to the comment.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .._bounded import write_atomic
from ..analysis.decide import p_text
from ..analysis.summary import detector_line
from .parts import rate_text

__all__ = ["render", "write", "escape", "code"]

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_ICON = {"fixed": "✅", "removed": "✅", "not-fixed": "❌", "not-removed": "❌",
         "inconclusive": "⚠️"}


def escape(text: Any) -> str:
    """One line of untrusted text made inert inside a Markdown paragraph or table cell
    (GitHub/GitLab): ``<``/``&`` as entities (no HTML), the emphasis, code, link and table
    characters (``\\ ` * _ [ ] | ~``) backslash-escaped, newlines folded."""
    flat = " ".join(str(text).split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;")
    return _MD_SPECIAL.sub(r"\\\1", flat)


def code(text: Any) -> str:
    """Untrusted text as an inline code span (backticks and table pipes neutralised)."""
    flat = " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")
    return f"`{flat}`"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render(data: dict[str, Any]) -> str:
    """The Markdown text for a report dict (:func:`kit.report.report_dict`)."""
    lines: list[str] = []
    comp = data.get("comparison")
    camps = data["campaigns"]
    if comp is not None:
        sig = code(comp["settings"]["signature"])
        verdict = comp["verdict"]
        dec = comp["decision"]
        base, cand = comp["baseline"], comp["candidate"]
        lines.append(f"### coldstart: {_ICON.get(verdict, '')} **{verdict}** — {sig}")
        lines.append("")
        tier, kind = comp.get("tier"), comp.get("kind")
        what = ((f"two builds: {code(comp.get('change'))}" if comp.get("change")
                 else "two builds") if kind == "build" else
                f"one build, the scenario changed: {code(comp.get('change'))}"
                if kind == "scenario" else "one build, nothing changed")
        about = ("a data race on the allocator statics" if tier == "mechanism" else "a crash")
        lines += [f"_{escape(tier)} tier ({about}); {what}._", ""]
        lines.append(escape(dec["reason"]) + ".")
        if dec.get("scope"):
            lines += ["", f"_What the {escape(tier)} tier sees:_ {escape(dec['scope'])}."]
        if dec.get("advice"):
            lines += ["", f"_Next:_ {escape(dec['advice'])}."]
        lines += ["", _row(["", f"baseline ({escape(base['label'])})",
                            f"candidate ({escape(cand['label'])})"]),
                  _row(["---", "---", "---"]),
                  _row(["counted launches", str(base["counted"]), str(cand["counted"])]),
                  _row(["infra errors (not counted)", str(base["infra_errors"]),
                        str(cand["infra_errors"])]),
                  _row([sig, rate_text(base["rate"]), rate_text(cand["rate"])])]
        if len(camps) == 2:
            lines.append(_row(["any crash", rate_text(camps[0]["crashed"]),
                               rate_text(camps[1]["crashed"])]))
        test = dec.get("test") or {}
        lines += ["", f"One-sided exact test p = {p_text(dec['p'])}"
                  + (f" (Fisher {p_text(test['fisher_p'])})" if test.get("fisher_p") is not None
                     else "")
                  + (f"; anytime-valid e-value {dec['e_value']:.3g} (sequential rule)"
                     if dec.get("e_value") is not None else "")
                  + f"; ceiling {comp['settings']['ceiling']:.2%} at "
                    f"{1 - comp['settings']['alpha']:.0%}, candidate's upper bound "
                    f"{dec['candidate_upper']:.2%}."
                  if dec.get("p") is not None else ""]
        if comp.get("stratified_p") is not None:
            lines.append(f"Stratified over {len(comp['devices'])} devices: p = "
                         f"{p_text(comp['stratified_p'])}.")
        moved = comp["moved"]
        if moved:
            lines += ["", "**Crashes that rose in the candidate:**"]
            for m in moved:
                flag = " (significant)" if m["significant"] else ""
                lines.append(f"- {code(m['key'])}: {rate_text(m['baseline'])} → "
                             f"{rate_text(m['candidate'])}{flag}")
        for note in comp["notes"]:
            lines += ["", f"> {escape(note)}"]
    else:
        lines.append("### coldstart campaign summary")
        lines += ["", _row(["campaign", "target", "counted", "infra errors", "crashed",
                            "top crash class"]),
                  _row(["---"] * 6)]
        labels = [c["label"] for c in camps]
        for c in camps:
            top = c["crash_classes"][0] if c["crash_classes"] else None
            name = escape(c["label"]) + (f" ({code(c['path'])})" if labels.count(c["label"]) > 1
                                         and c.get("path") else "")
            lines.append(_row([name, escape(c["target"]), str(c["counted"]),
                               str(c.get("infra_error_count", len(c["infra_errors"]))),
                               rate_text(c["crashed"]),
                               f"{code(top['key'])} {top['count']}" if top else "—"]))
    for c in camps:
        line = detector_line(_detector(c.get("detector")))
        if line:
            lines += ["", f"{escape(c['label'])}: {escape(line)}"]
    said = set(comp["notes"]) if comp else set()  # a comparison already lists them
    for c in camps:  # e.g. a sequential rule's stop, which must not read as a killed run
        for note in c.get("notes") or []:
            if f"{c['label']}: {note}" not in said:
                lines += ["", f"> {escape(c['label'])}: {escape(note)}"]
    lines += ["", f"<sub>coldstart {escape(data['coldstart_version'])}, report schema "
                  f"{data['schema_version']}</sub>", ""]
    return "\n".join(lines)


def _detector(d: dict[str, Any] | None) -> Any:
    """A ``summary.json`` detector dict back as a :class:`DetectorSummary` (for its line)."""
    if not d:
        return None
    from ..analysis.stats import Rate
    from ..analysis.summary import DetectorSummary

    r = d["detected"]
    return DetectorSummary(Rate(r["count"], r["n"], r["low"], r["high"],
                                r.get("confidence", 0.95)), d.get("races_per_launch"),
                           d.get("unknown", 0), d.get("detected_crashed", 0),
                           tuple(d.get("tools") or ()))


def write(data: dict[str, Any], path: Path) -> None:
    """Write :func:`render` of ``data`` to ``path`` (:func:`kit._bounded.write_atomic`)."""
    write_atomic(path, render(data).encode("utf-8"))
