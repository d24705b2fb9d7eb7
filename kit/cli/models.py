"""``coldstart models fetch|verify|expected``: the model set (see :mod:`kit.modelset`)."""

from __future__ import annotations

import argparse
import json

from .. import modelset
from .._bounded import write_atomic

__all__ = ["register"]


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``models`` and its subcommands."""
    models = commands.add_parser("models", help="fetch and verify the openWakeWord model set")
    sub = models.add_subparsers(dest="models_command", metavar="ACTION")
    sub.required = True
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--models", metavar="DIR", default=None,
                        help="model set folder (default: the checkout's models/)")
    fetch = sub.add_parser("fetch", parents=[common],
                           help="download openwakeword==0.4.0 from PyPI, extract and check "
                                "the models")
    fetch.add_argument("--force", action="store_true", help="extract again even if present")
    fetch.set_defaults(func=_fetch)
    verify = sub.add_parser("verify", parents=[common],
                            help="check the models and clip against their pinned sha256")
    verify.set_defaults(func=_verify)
    expected = sub.add_parser("expected", parents=[common],
                              help="recompute expected.json with the Python reference "
                                   "(PyPI onnxruntime, CPU)")
    expected.add_argument("--check", action="store_true",
                          help="compare with the committed expected.json instead of writing")
    expected.set_defaults(func=_expected)


def _fetch(args: argparse.Namespace) -> int:
    ms = modelset.load_modelset(args.models)
    modelset.fetch(ms, force=args.force, log=lambda msg: print(f"models: {msg}"))
    return _verify(args)


def _verify(args: argparse.Namespace) -> int:
    ms = modelset.load_modelset(args.models)
    modelset.require_verified(ms)
    for model in ms.models:
        print(f"ok  {model.path.name:<24} {model.sha256[:16]}  {model.size} bytes")
    print(f"ok  {ms.clip.name:<24} {ms.clip_sha256[:16]}")
    return 0


def _expected(args: argparse.Namespace) -> int:
    ms = modelset.load_modelset(args.models)
    result = modelset.compute_expected(ms)
    if args.check:
        ok, diff = modelset.scores_match(ms.expected(), result["scores"])
        print(f"reference scores {result['scores']}: max |diff| {diff:.2e} "
              f"({'ok' if ok else 'MISMATCH'})")
        return 0 if ok else 1
    write_atomic(ms.expected_path, (json.dumps(result, indent=2) + "\n").encode())
    print(f"wrote {ms.expected_path}: scores {result['scores']}")
    return 0
