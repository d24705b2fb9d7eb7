"""Scenarios: what one launch does, encoded once as a ``coldstart://run?...`` URL.

The same URL is the deep link the mobile apps are opened with and the argument the host
workload takes (docs/design.md, "Vocabulary"). Keys, their defaults and their ranges:

=========  ====================================  ==========================================
key        default                               values
=========  ====================================  ==========================================
id         (none; set per launch)                ``[A-Za-z0-9._-]{1,64}``
mode       ``concurrent``                        ``concurrent`` | ``serial``
sessions   ``3``                                 1..64 creates; they cycle through ``models``
models     ``melspectrogram,embedding_model,``   names from the model set manifest
           ``hey_jarvis_v0.1``
ep         ``xnnpack,cpu``                       comma list of ``xnnpack``, ``cpu``
threads    ``1``                                 1..64 intra-op threads
infer      ``1``                                 0 | 1: run the pipeline once
release    ``1``                                 0 | 1: release the sessions
inject     ``none``                              ``none`` | ``segv@P`` | ``abort@P`` | ``hang@P``
                                                 with P a phase from ``start`` to
                                                 ``sessions-released``
load       ``path``                              ``path`` | ``bytes`` (host amplifier)
warmup     ``none``                              ``none`` | ``cpu`` (host amplifier)
log        ``warning``                           ``warning`` | ``verbose``: the ORT
                                                 environment's log level (host amplifier)
hold       ``0``                                 0..10000 ms: hold each thread that creates
                                                 XNNPACK's shared allocator inside the racy
                                                 window (host amplifier; needs ``log=verbose``
                                                 and turns it on when ``log`` is not given)
=========  ====================================  ==========================================

Users may also write a scenario without the scheme, as ``mode=serial&sessions=8`` or
``mode=serial,sessions=8``; :func:`parse_scenario` accepts all three spellings.
The canonical URL (:meth:`Scenario.to_url`) lists every key in the order above, so two
scenarios are equal exactly when their URLs (without ``id``) are equal; the keys added after
the first protocol version (:data:`EXTENSION_DEFAULTS`: ``log``, ``hold``) appear only when they differ
from their default, so apps that predate them still accept every default scenario.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Iterable
from urllib.parse import parse_qsl, quote, urlsplit

from .errors import UsageError

__all__ = [
    "Scenario",
    "parse_scenario",
    "Phase",
    "PHASES",
    "INJECT_KINDS",
    "DEFAULT_MODELS",
    "LAUNCH_ID_RE",
    "EXTENSION_DEFAULTS",
    "HOST_ONLY_KEYS",
    "MAX_HOLD_MS",
]

class Phase(str, enum.Enum):
    """The phases every app reports, in order (docs/design.md). ``error`` is an event, not a
    phase: the app reports it instead of the next phase when it catches a failure. A member
    compares equal to its string (``Phase.DONE == "done"``)."""

    START = "start"
    MODELS_READY = "models-ready"
    SESSIONS_CREATED = "sessions-created"
    INFERENCE_DONE = "inference-done"
    SESSIONS_RELEASED = "sessions-released"
    DONE = "done"

    def __str__(self) -> str:
        return self.value

    @property
    def order(self) -> int:
        """0 for ``start`` up to 5 for ``done``."""
        return _PHASE_ORDER[self]


#: The phase names, in order (what the protocol carries).
PHASES: tuple[str, ...] = tuple(p.value for p in Phase)
_PHASE_ORDER = {p: i for i, p in enumerate(Phase)}
INJECT_KINDS: tuple[str, ...] = ("segv", "abort", "hang")
DEFAULT_MODELS: tuple[str, ...] = ("melspectrogram", "embedding_model", "hey_jarvis_v0.1")
KNOWN_EPS: tuple[str, ...] = ("xnnpack", "cpu")
LAUNCH_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_MODEL_NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_KEYS = ("id", "mode", "sessions", "models", "ep", "threads", "infer", "release", "inject",
         "load", "warmup", "log", "hold")
#: Keys added after protocol version 1, with their defaults: a canonical URL carries them
#: only when they differ from these, so an app that predates a key never sees it unasked.
EXTENSION_DEFAULTS: dict[str, str] = {"log": "warning", "hold": "0"}
#: The keys only the host workload knows: the mobile apps refuse them as unknown keys.
HOST_ONLY_KEYS: tuple[str, ...] = ("hold",)
#: The longest hold, in ms (``hold=``): 10 s, far above what the race window needs.
MAX_HOLD_MS = 10_000
_HINT = "see `coldstart run --help` for scenario keys"
#: The scenario keys, for ``coldstart run --help`` (the module doc has the details).
KEYS_HELP = """scenario keys (--scenario 'k=v&k=v', 'k=v,k=v' or a coldstart://run?... URL):
  mode=concurrent|serial         creates released together (Promise.all) or one by one
  sessions=1..64                 creates; they cycle through models (default 3)
  models=NAME,...                model names from models/manifest.json (default: all three)
  ep=xnnpack,cpu                 execution providers, in order (default xnnpack,cpu)
  threads=1..64                  intra-op threads (default 1)
  infer=0|1, release=0|1         run the pipeline once, release the sessions (default 1, 1)
  inject=none|segv@P|abort@P|hang@P   crash or stall right after phase P (positive controls)
  load=path|bytes, warmup=none|cpu, log=warning|verbose   host amplifiers (docs/race.md)
  hold=0..10000                  ms each creating thread is held inside the racy window
                                 (host and rn-host; turns on log=verbose; no --detector;
                                 docs/race.md, "The hold")
phases: start, models-ready, sessions-created, inference-done, sessions-released, done"""


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One launch's instructions. Immutable; build with :func:`parse_scenario`.

    Attributes:
        mode: ``concurrent`` (all creates released together) or ``serial`` (one by one).
        sessions: number of ``InferenceSession`` creates, cycling through ``models``.
        models: model names (manifest ``name`` fields), in pipeline order.
        ep: execution providers, in the order they are appended.
        threads: intra-op threads per session.
        infer: run the pipeline once after the creates.
        release: release every session before ``done``.
        inject: ``None`` or ``(kind, phase)``: crash (``segv``/``abort``) or stall (``hang``)
            right after reporting ``phase``. Positive controls only.
        load: ``path`` (create from a file path) or ``bytes`` (from memory).
        warmup: ``none`` or ``cpu`` (one CPU-only session created before the race).
        log: the ORT environment's log level, ``warning`` (production) or ``verbose``
            (host amplifier: onnxruntime then formats an INFO line, "Creating BFCArena for
            XnnpackExecutionProvider ...", between its unsynchronised null check and the
            assignment of the shared XNNPACK allocator, which widens the race window; see
            docs/race.md for what it does to the witnessed-race rate).
        hold: milliseconds the host workload's logging function sleeps on that INFO line,
            holding the creating thread between the null check and the assignment, so
            the other creating threads pass the null check too; they leave one at a time in
            session order (active testing; the host workload and rn-host's program; 0 =
            the production shape; needs ``log=verbose``). docs/race.md, "The hold".
        id: the launch id, or ``None`` for a scenario not yet bound to a launch.
    """

    mode: str = "concurrent"
    sessions: int = 3
    models: tuple[str, ...] = DEFAULT_MODELS
    ep: tuple[str, ...] = ("xnnpack", "cpu")
    threads: int = 1
    infer: bool = True
    release: bool = True
    inject: tuple[str, str] | None = None
    load: str = "path"
    warmup: str = "none"
    log: str = "warning"
    hold: int = 0
    id: str | None = None

    def __post_init__(self) -> None:
        _check(self.mode in ("concurrent", "serial"), "mode", self.mode, "concurrent or serial")
        _check(isinstance(self.sessions, int) and 1 <= self.sessions <= 64, "sessions",
               self.sessions, "a whole number from 1 to 64")
        _check(isinstance(self.threads, int) and 1 <= self.threads <= 64, "threads",
               self.threads, "a whole number from 1 to 64")
        _check(bool(self.models) and all(_MODEL_NAME_RE.match(m) for m in self.models),
               "models", ",".join(self.models), "comma-separated model names")
        _check(bool(self.ep) and all(e in KNOWN_EPS for e in self.ep) and len(set(self.ep)) ==
               len(self.ep), "ep", ",".join(self.ep), "a comma list of xnnpack, cpu")
        _check(self.load in ("path", "bytes"), "load", self.load, "path or bytes")
        _check(self.warmup in ("none", "cpu"), "warmup", self.warmup, "none or cpu")
        _check(self.log in ("warning", "verbose"), "log", self.log, "warning or verbose")
        _check(isinstance(self.hold, int) and not isinstance(self.hold, bool)
               and 0 <= self.hold <= MAX_HOLD_MS, "hold", self.hold,
               f"a whole number of milliseconds from 0 to {MAX_HOLD_MS}")
        _check(self.hold == 0 or self.log == "verbose", "log", self.log,
               f"verbose with hold={self.hold} (the hold engages on an INFO line; leave log "
               f"out and hold turns it on)")
        if self.inject is not None:
            kind, phase = self.inject
            _check(kind in INJECT_KINDS and phase in PHASES[:-1], "inject", f"{kind}@{phase}",
                   "none or KIND@PHASE with KIND segv|abort|hang and PHASE start.."
                   "sessions-released")
        if self.id is not None:
            _check(bool(LAUNCH_ID_RE.match(self.id)), "id", self.id,
                   "1-64 characters from A-Z a-z 0-9 . _ -")

    # -- encoding ---------------------------------------------------------------------
    def query_items(self, with_id: bool = True) -> list[tuple[str, str]]:
        """The scenario as ``(key, value)`` pairs in canonical order (see module doc); an
        extension key (:data:`EXTENSION_DEFAULTS`) only when it is not at its default."""
        items = [
            ("mode", self.mode),
            ("sessions", str(self.sessions)),
            ("models", ",".join(self.models)),
            ("ep", ",".join(self.ep)),
            ("threads", str(self.threads)),
            ("infer", "1" if self.infer else "0"),
            ("release", "1" if self.release else "0"),
            ("inject", "none" if self.inject is None else "@".join(self.inject)),
            ("load", self.load),
            ("warmup", self.warmup),
        ]
        items += [(key, value) for key, value in (("log", self.log), ("hold", str(self.hold)))
                  if value != EXTENSION_DEFAULTS[key]]
        if with_id and self.id is not None:
            items.insert(0, ("id", self.id))
        return items

    def to_url(self, with_id: bool = True) -> str:
        """The canonical ``coldstart://run?...`` URL. Every value is URL-safe by validation,
        and quoted anyway (``,`` and ``@`` kept) so the URL survives any shell quoting."""
        query = "&".join(f"{k}={quote(v, safe=',@')}" for k, v in self.query_items(with_id))
        return f"coldstart://run?{query}"

    def key(self) -> str:
        """The scenario without its launch id: equal keys mean the same scenario."""
        return self.to_url(with_id=False)

    def with_id(self, launch_id: str) -> "Scenario":
        """A copy bound to ``launch_id`` (validated as :data:`LAUNCH_ID_RE`)."""
        return dataclasses.replace(self, id=launch_id)

    def with_changes(self, **changes: object) -> "Scenario":
        """A copy with some fields replaced (validated again)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def describe(self) -> str:
        """A short human label, e.g. ``concurrent x3 xnnpack,cpu``, plus non-default keys."""
        text = f"{self.mode} x{self.sessions} {','.join(self.ep)}"
        default = {**EXTENSION_DEFAULTS, **dict(Scenario().query_items(with_id=False))}
        for key, value in self.query_items(with_id=False):
            if key in ("mode", "sessions", "ep"):
                continue
            if default[key] != value:
                text += f" {key}={value}"
        return text


def _check(ok: bool, key: str, value: object, expected: str) -> None:
    if not ok:
        raise UsageError(f"scenario key {key}={_shown(repr(value), 60)} is invalid: expected "
                         f"{expected}", _HINT)


def _split_pairs(text: str) -> list[tuple[str, str]]:
    text = text.strip()
    if "://" in text and not text.startswith("coldstart:"):
        raise UsageError(f"scenario URL {text!r} is not a coldstart://run?... URL", _HINT)
    if text.startswith("coldstart:"):
        parts = urlsplit(text)
        if parts.scheme != "coldstart" or parts.netloc not in ("run", ""):
            raise UsageError(f"scenario URL {text!r} is not a coldstart://run?... URL", _HINT)
        if parts.fragment or text.endswith("#"):  # never dropped without a word
            raise UsageError(f"scenario URL {_shown(text, 80)} has a #fragment "
                             f"({_shown(parts.fragment, 40)!r}), which no scenario key reads",
                             "drop the #... part, or write it as a key: &key=value")
        text = parts.query
    if not text:
        return []
    if "&" not in text and "=" in text and text.count("=") > 1 and "," in text:
        # "mode=serial,sessions=8": commas separate pairs, except inside list values
        pairs: list[tuple[str, str]] = []
        for chunk in text.split(","):
            if "=" in chunk or not pairs:
                key, sep, value = chunk.partition("=")
                if not sep:
                    raise UsageError(f"scenario part {chunk!r} is not KEY=VALUE", _HINT)
                pairs.append((key.strip(), value.strip()))
            else:  # continuation of a list value such as models=a,b
                key, value = pairs[-1]
                pairs[-1] = (key, f"{value},{chunk.strip()}")
        return pairs
    try:
        return parse_qsl(text, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise UsageError(f"scenario {text!r} is not KEY=VALUE pairs joined by &", _HINT) from None


def _shown(value: str, limit: int = 40) -> str:
    """``value`` for an error message, cut to ``limit`` characters."""
    return value if len(value) <= limit else f"{value[:limit]}... ({len(value)} characters)"


def _as_int(key: str, value: str) -> int:
    if not re.fullmatch(r"-?[0-9]+", value):
        raise UsageError(f"scenario key {key}={_shown(value)!r} is invalid: expected a whole "
                         f"number", _HINT)
    if len(value.lstrip("-").lstrip("0")) > 7:  # out of every range, and int() of a huge
        raise UsageError(f"scenario key {key}={_shown(value)} is invalid: out of range",
                         _HINT)                # string is slow
    return int(value)


def _as_flag(key: str, value: str) -> bool:
    if value not in ("0", "1"):
        raise UsageError(f"scenario key {key}={value!r} is invalid: expected 0 or 1", _HINT)
    return value == "1"


def parse_scenario(text: str | None = None, base: Scenario | None = None,
                   overrides: Iterable[tuple[str, str]] = ()) -> Scenario:
    """Parse a scenario from a URL, a query string or ``k=v,k=v`` text.

    Args:
        text: ``coldstart://run?mode=serial``, ``mode=serial&sessions=8``,
            ``mode=serial,sessions=8``, or ``None``/empty for the defaults.
        base: defaults for keys the text leaves out (the module defaults when ``None``).
        overrides: more ``(key, value)`` pairs applied after ``text``.

    Returns:
        A validated :class:`Scenario`.

    Raises:
        UsageError: an unknown key, a repeated key, or a value out of range.
    """
    pairs = _split_pairs(text or "") + list(overrides)
    seen: set[str] = set()
    fields: dict[str, object] = {}
    for key, value in pairs:
        if key not in _KEYS:
            raise UsageError(f"unknown scenario key {key!r}",
                             f"known keys: {', '.join(_KEYS)}")
        if key in seen:
            raise UsageError(f"scenario key {key!r} is given twice", _HINT)
        seen.add(key)
        if key in ("sessions", "threads", "hold"):
            fields[key] = _as_int(key, value)
        elif key in ("infer", "release"):
            fields[key] = _as_flag(key, value)
        elif key in ("models", "ep"):
            fields[key] = tuple(v.strip() for v in value.split(",") if v.strip())
        elif key == "inject":
            if value == "none":
                fields[key] = None
            else:
                kind, sep, phase = value.partition("@")
                if not sep:
                    raise UsageError(f"scenario key inject={value!r} is invalid: expected "
                                     "KIND@PHASE, e.g. segv@sessions-created", _HINT)
                fields[key] = (kind, phase)
        else:
            fields[key] = value
    start = base or Scenario()
    if fields.get("hold", 0) and "log" not in fields:  # the hold engages on an INFO line
        fields["log"] = "verbose"
    return dataclasses.replace(start, **fields)  # type: ignore[arg-type]
