"""``junit.xml``: JUnit XML that CI systems and device farms ingest.

Layout (the common Jenkins/Surefire dialect: ``testsuites > testsuite > testcase`` with
``failure``/``skipped`` children and ``properties``):

* a comparison gives a suite ``coldstart compare`` whose first test case is the verdict
  (``fixed`` and ``removed`` pass, ``not-fixed`` and ``not-removed`` fail, ``inconclusive``
  is skipped unless it is in ``fail_on``; the suite's properties name the verdict, its
  tier — ``mechanism`` or ``failure`` — and its kind: ``build``, or ``scenario`` for one
  build under two scenarios, with the change), then one case per check (positive
  control, exact test, ceiling, same scenario; a check that did not pass is a failure
  only when the verdict is one, else skipped with its reason, so the suite's result is
  the verdict) and one per crash class (the target follows the verdict; another class
  fails whenever its rate rose significantly in the candidate, after Holm's adjustment:
  a crash that moved);
* each campaign gives a suite with its checks (counted launches, infra errors, create
  overlap in concurrent scenarios) and, in a campaign report, one case per crash class
  that fails when the class occurred.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from .._bounded import write_atomic
from ..analysis.decide import p_text
from ..analysis.summary import SHOWN_ROWS, more_text
from ..analysis.target import ANY_CRASH, RACE_DETECTED, RACE_WITNESSED
from .parts import rate_text

__all__ = ["write", "build"]

_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: Any) -> str:
    """Text safe for XML 1.0 (control characters dropped)."""
    return _BAD_XML.sub("", str(text))


class _Suite:
    def __init__(self, parent: ET.Element, name: str, timestamp: str) -> None:
        self.el = ET.SubElement(parent, "testsuite", name=_clean(name), timestamp=timestamp)
        self.props = ET.SubElement(self.el, "properties")
        self.tests = self.failures = self.skipped = 0

    def prop(self, name: str, value: Any) -> None:
        ET.SubElement(self.props, "property", name=name, value=_clean(value))

    def case(self, classname: str, name: str, *, failure: str | None = None,
             skipped: str | None = None, out: str | None = None,
             failure_type: str = "failure") -> None:
        case = ET.SubElement(self.el, "testcase", classname=_clean(classname),
                             name=_clean(name), time="0")
        self.tests += 1
        if failure is not None:
            ET.SubElement(case, "failure", message=_clean(failure),
                          type=failure_type).text = _clean(failure)
            self.failures += 1
        elif skipped is not None:
            ET.SubElement(case, "skipped", message=_clean(skipped))
            self.skipped += 1
        if out:
            ET.SubElement(case, "system-out").text = _clean(out)

    def close(self) -> None:
        self.el.set("tests", str(self.tests))
        self.el.set("failures", str(self.failures))
        self.el.set("errors", "0")
        self.el.set("skipped", str(self.skipped))


def _campaign_suite(root: ET.Element, camp: dict[str, Any], stamp: str,
                    with_classes: bool) -> _Suite:
    label = camp["label"]
    suite = _Suite(root, f"campaign {label}", stamp)
    cls = f"coldstart.campaign.{label}"
    for key in ("label", "target", "scenario", "path", "counted", "records"):
        suite.prop(key, camp.get(key))
    suite.case(cls, "counted launches",
               failure=None if camp["counted"] else "no counted launch (every launch was an "
                                                    "infra error, or none ran)",
               out=f"{camp['counted']} counted of {camp['records']} records")
    suite.case(cls, "finished (every planned launch made, or ended by its rule)",
               failure=camp.get("unfinished"),
               out=f"{camp['records']} records, {camp.get('planned_launches')} planned")
    infra = camp["infra_errors"]
    total = camp.get("infra_error_count", len(infra))
    lines = [f"{e['launch_id']} on {e['device']}: {e['error']}" for e in infra[:SHOWN_ROWS]]
    if total > len(lines):
        lines.append(more_text(total - len(lines), "infra errors"))
    suite.case(cls, "infra errors (retried, never counted)", out="\n".join(lines) or "none")
    if camp.get("detector"):
        suite.prop("race_detected", rate_text(camp["detector"]["detected"]))
    overlap = camp["overlap"]
    name = "creates overlapped (every create in flight at once)"
    if "mode=concurrent" not in camp.get("scenario", ""):
        suite.case(cls, name, skipped="not a concurrent scenario")
    elif not overlap["timed"]:
        suite.case(cls, name, skipped="no launch reported create timings")
    else:
        hit = overlap["overlapped"]
        suite.case(cls, name, failure=None if hit["count"] else
                   f"no launch of {overlap['timed']} had its creates overlap: the scenario "
                   f"did not create sessions at the same time", out=rate_text(hit))
    if with_classes:
        examples = {s["crash_class"]: s for s in camp["signatures"]}
        for row in camp["crash_classes"]:
            example = examples.get(row["key"])
            detail = ""
            if example:
                detail = (f"\nexample {example['example_launch_id']}: {example['signature']}\n"
                          + "\n".join(example["example_frames"]))
            suite.case("coldstart.crash-class", row["key"],
                       failure=f"{row['key']} in {rate_text(row)} launches",
                       out=detail.strip())
    suite.close()
    return suite


def build(data: dict[str, Any]) -> ET.ElementTree:
    """The JUnit XML tree for a report dict (:func:`kit.report.report_dict`)."""
    root = ET.Element("testsuites", name="coldstart")
    stamp = data["generated_at"].replace("Z", "")
    suites: list[_Suite] = []
    comp = data.get("comparison")
    if comp is not None:
        sig = comp["settings"]["signature"]
        alpha = comp["settings"]["alpha"]
        ceiling = comp["settings"]["ceiling"]
        dec = comp["decision"]
        base, cand = comp["baseline"], comp["candidate"]
        suite = _Suite(root, f"coldstart compare {base['label']} vs {cand['label']} ({sig})",
                       stamp)
        for key, value in (("verdict", comp["verdict"]), ("tier", comp.get("tier")),
                           ("kind", comp.get("kind")), ("change", comp.get("change")),
                           ("signature", sig), ("alpha", alpha), ("ceiling", ceiling),
                           ("p", None if dec["p"] is None else p_text(dec["p"])),
                           ("e_value", dec.get("e_value")),
                           ("baseline", base["path"]), ("candidate", cand["path"])):
            if value is not None:
                suite.prop(key, value)
        cls = "coldstart.compare"
        verdict = comp["verdict"]
        failing = verdict in ("not-fixed", "not-removed") or verdict in data.get("fail_on", [])
        passing = verdict in ("fixed", "removed")

        def check(name: str, problem: str | None, out: str | None = None) -> None:
            """A check that did not pass fails only when the verdict fails the suite."""
            if problem is None:
                suite.case(cls, name, out=out)
            elif failing:
                suite.case(cls, name, failure=problem, out=out)
            else:
                suite.case(cls, name, skipped=problem, out=out)

        text = f"{verdict} ({comp.get('tier')} tier, {comp.get('kind')}): {dec['reason']}"
        if dec.get("advice"):
            text += f" ({dec['advice']})"
        if passing:
            suite.case(cls, "verdict", out=text)
        elif failing:
            suite.case(cls, "verdict", failure=text, failure_type=verdict)
        else:
            suite.case(cls, "verdict", skipped=text)
        for item in comp["checks"]:  # decided by the comparison: rendered, never re-derived
            check(item["name"], item["problem"], item["detail"] or None)
        moved = {m["key"]: m for m in comp["moved"]}
        keys = {row["key"] for camp in data["campaigns"] for row in camp["crash_classes"]}
        keys |= set(moved)
        if sig in (RACE_WITNESSED, RACE_DETECTED, ANY_CRASH) or sig in keys:
            target_text = (f"baseline {rate_text(base['rate'])}, "
                           f"candidate {rate_text(cand['rate'])}")
            if passing:
                suite.case("coldstart.crash-class", sig, out=target_text)
            elif failing:
                suite.case("coldstart.crash-class", sig, failure=target_text)
            else:
                suite.case("coldstart.crash-class", sig, skipped=f"inconclusive: {target_text}")
        for key in sorted(keys - {sig}):
            m = moved.get(key)
            if m is None:
                suite.case("coldstart.crash-class", key, out="rate did not rise in the candidate")
            elif m["significant"]:
                suite.case("coldstart.crash-class", key,
                           failure=f"{key} rose from {rate_text(m['baseline'])} to "
                                   f"{rate_text(m['candidate'])} (Holm-adjusted p = "
                                   f"{p_text(m['p_holm'])}): the crash may have moved")
            else:
                suite.case("coldstart.crash-class", key,
                           out=f"rose from {rate_text(m['baseline'])} to "
                               f"{rate_text(m['candidate'])}, not significantly "
                               f"(Holm-adjusted p = {p_text(m['p_holm'])})")
        suite.close()
        suites.append(suite)
    for camp in data["campaigns"]:
        suites.append(_campaign_suite(root, camp, stamp, with_classes=comp is None))
    for key in ("tests", "failures", "skipped"):
        root.set(key, str(sum(getattr(s, key) for s in suites)))
    root.set("errors", "0")
    ET.indent(root)
    return ET.ElementTree(root)


def write(data: dict[str, Any], path: Path) -> None:
    """Write :func:`to_bytes` of ``data`` to ``path`` (:func:`kit._bounded.write_atomic`)."""
    write_atomic(path, to_bytes(data))


def to_bytes(data: dict[str, Any]) -> bytes:
    """:func:`build` of ``data`` as a UTF-8 document with an XML declaration."""
    buf = io.BytesIO()
    build(data).write(buf, encoding="utf-8", xml_declaration=True)
    return buf.getvalue()
