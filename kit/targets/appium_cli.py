"""``coldstart run appium`` (being written)."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``run appium``."""
