"""One resume: every refusal of ``--resume`` comes from one message table (:data:`CONFLICTS`),
raised once per conflict between what a command gave and what the campaign holds, and the
campaign's own checks (its identity, its launches, the setup it ran with) are made here once.
What a command left out is merged by :func:`kit.campaign.request.resolve_request`, which the
CLI and the pytest plugin both call."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import UsageError
from ..records import LaunchRecord
from .meta import CampaignMeta, RuleMeta

__all__ = ["CONFLICTS", "conflict", "check_identity", "check_launches", "check_same_setup",
           "check_kept_rule"]

_SAME = "resume with the same options, or choose another --out"
_OWN = "resume with the campaign's own options"

#: kind -> (message, what to do); ``{path}`` is the campaign, the other fields per kind
CONFLICTS: dict[str, tuple[str, str]] = {
    "other": ("cannot resume {path}: its {key} is {old!r}, not {new!r}", _SAME),
    "other-scenario": ("cannot resume {path}: its scenario has {old}, not {new}", _SAME),
    "used": ("cannot resume {path} with {new} launches: it already has {old}",
             "resume with at least that many --launches"),
    "planned": ("cannot resume {path} with {new} launches: it plans {old}",
                "resume without --launches (compare and report use an unfinished campaign "
                "as it is)"),
    "rule-added": ("cannot resume {path} under --until-verdict: it was started without a "
                   "rule", "resume without it, or start a new campaign"),
    "rule-dropped": ("cannot resume {path} without its rule (--until-verdict {old})",
                     "resume without rule options: they are taken from the campaign"),
    "other-rule": ("cannot resume {path} under another rule: its {key} was {old!r}, now "
                   "{new!r}", "resume without the --until-verdict options, or start a new "
                              "campaign"),
    "rule-launches": ("cannot resume {path} with --launches {new}: its rule's thresholds are "
                      "for {old}", "resume without --launches"),
    "interleaving": ("cannot resume {path} {how} a baseline build: it was started {old}",
                     _OWN),
    "other-setup": ("cannot resume {path} with other settings: {key} was {old!r}, now "
                    "{new!r}{more}", "resume with the campaign's own options, or choose "
                                     "another --out"),
    "other-build": ("cannot resume {path} with {flag} {new}: it ran on {what} {old}",
                    "resume without {flag}"),
    "baseline-build": ("cannot resume {path} with {flag}: it was started against a finished "
                       "baseline", "resume without {flag}"),
    "other-baseline-build": ("cannot resume {path} with {flag} {new}: its baseline ran on "
                             "{what} {old}", "resume without {flag}"),
}


def conflict(kind: str, path: Any, **fields: Any) -> UsageError:
    """The one-line :class:`UsageError` of conflict ``kind`` (:data:`CONFLICTS`) for the
    campaign at ``path``; ``fields`` fill the message and its hint."""
    message, hint = CONFLICTS[kind]
    return UsageError(message.format(path=path, **fields), hint.format(path=path, **fields))


def check_identity(path: Any, meta: CampaignMeta, *, label: str, target: str,
                   scenario: str) -> None:
    """Refuse to resume a campaign of another label, target or scenario (canonical URL)."""
    for key, want in (("label", label), ("target", target), ("scenario", scenario)):
        if getattr(meta, key) != want:
            if key == "scenario":
                old, new = _differing_keys(meta.scenario, want)
                if old or new:  # the keys that differ, not two long URLs cut short
                    raise conflict("other-scenario", path, old=old or "its defaults",
                                   new=new or "the defaults")
            raise conflict("other", path, key=key, old=getattr(meta, key), new=want)


def _differing_keys(old_url: str, new_url: str) -> tuple[str, str]:
    """The query items of two canonical scenario URLs that differ, each side joined with
    ``&`` (``("hold=20", "hold=30")``); ``("", "")`` when the URLs differ otherwise."""
    from urllib.parse import parse_qsl, urlsplit

    old = dict(parse_qsl(urlsplit(old_url).query, keep_blank_values=True))
    new = dict(parse_qsl(urlsplit(new_url).query, keep_blank_values=True))
    keys = [k for k in {**old, **new} if old.get(k) != new.get(k)]
    return ("&".join(f"{k}={old[k]}" for k in keys if k in old),
            "&".join(f"{k}={new[k]}" for k in keys if k in new))


def check_launches(path: Any, meta: CampaignMeta, records: Sequence[LaunchRecord],
                   launches: int) -> None:
    """Refuse ``launches`` fewer than the campaign has started or plans (it would read as
    finished)."""
    used = 1 + max((r.index for r in records), default=-1)
    if launches < used:
        raise conflict("used", path, old=used, new=launches)
    if launches < meta.launches:
        raise conflict("planned", path, old=meta.launches, new=launches)


def check_same_setup(path: Path, meta: CampaignMeta, build: Mapping[str, Any],
                     options: Mapping[str, Any], learned: Sequence[str] = (),
                     per_device: Sequence[str] = ()) -> None:
    """Refuse to resume a campaign with another build or other launch options (a campaign
    holds launches of one setup: ``campaign.json`` describes them all). ``learned`` names
    build keys a target learns after the launches (they may change on resume);
    ``per_device`` names options that map a device id to its value: only a device the
    campaign ran on before is held to its value (another device may join it)."""
    changed = []
    # options first: they are what the user typed (--poison, --witness...)
    for section, new in (("options", options), ("build", build)):
        old = getattr(meta, section)
        for key, value in new.items():
            if section == "options" and key in per_device and isinstance(value, Mapping) \
                    and isinstance(old.get(key), Mapping):
                changed += [(f"options.{key}[{device!r}]", old[key][device], each)
                            for device, each in value.items()
                            if device in old[key] and old[key][device] != each]
            elif key in old and old[key] != value and key not in learned:
                changed.append((f"{section}.{key}", old[key], value))
    if changed:
        key, old, new = changed[0]
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        raise conflict("other-setup", path, key=key, old=old, new=new, more=more)


def check_kept_rule(path: Any, kept: RuleMeta, given: Mapping[str, Any]) -> None:
    """Refuse rule settings other than the campaign's rule (``kept``): ``given`` maps
    ``until_verdict`` (a directory, compared resolved) and the rule's settings by name to
    a value, ``None`` for one left out. The one check of a resumed rule (the request
    builder's and the session's).

    Raises:
        UsageError: the ``other-rule`` conflict, naming the first setting that differs.
    """
    kept_values = {"until_verdict": str(Path(kept.baseline).resolve()),
                   "signature": kept.signature, "alpha": kept.alpha, "ceiling": kept.ceiling,
                   "beta": kept.beta, "design_rate": kept.design_rate,
                   "stop_at_first_below": kept.stop_at_first_below}
    for key, value in given.items():
        if value is None or key not in kept_values:
            continue
        now = str(Path(value).resolve()) if key == "until_verdict" else value
        if now != kept_values[key]:
            flag = "--event" if key == "signature" else "--" + key.replace("_", "-")
            raise conflict("other-rule", path, key=flag, old=kept_values[key], new=now)
