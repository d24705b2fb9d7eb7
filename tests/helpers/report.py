"""Shared by the report test modules: an HTML report opened in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["check_html_renders_its_plots"]

def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:  # scripts/setup.sh installs it: a missing browser fails, never skips
        pytest.fail("chromium is not installed: run scripts/setup.sh (apt-get install -y "
                    "chromium)")
    return exe


def _chromium_run(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=300)  # a bound: seconds, more when loaded


def check_html_renders_its_plots(html: Path, work: Path) -> None:
    """Open ``html`` in headless Chromium: every plot decodes (natural size > 0, read by a
    checker script in a copy without the page's CSP), and a screenshot shows the plots'
    colours."""
    copy = work / "checked.html"
    checker = ("<script>window.addEventListener('load', () => { document.body.setAttribute("
               "'data-sizes', Array.from(document.images).map(i => i.complete + ':' + "
               "i.naturalWidth + 'x' + i.naturalHeight).join(' ')); });</script>")
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html.read_text())
    copy.write_text(text.replace("</body>", checker + "</body>"))
    dom = _chromium_run(copy, work / "profile1", "--virtual-time-budget=5000", "--dump-dom")
    sizes = re.search(r'data-sizes="([^"]*)"', dom.stdout)
    assert sizes, dom.stdout[-2000:] + dom.stderr[-2000:]
    images = sizes.group(1).split()
    assert len(images) == 4
    for image in images:
        complete, size = image.split(":")
        width, height = map(int, size.split("x"))
        assert complete == "true" and width > 300 and height > 150, images
    shot = work / "shot.png"
    _chromium_run(html, work / "profile2", "--window-size=1280,2400", f"--screenshot={shot}")
    import matplotlib.image

    pixels = (matplotlib.image.imread(shot)[..., :3] * 255).round()
    for colour in ("#1565c0", "#c62828"):  # a build's series and the "any crash" series
        rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
        hits = (abs(pixels - rgb).max(axis=-1) <= 8).sum()
        assert hits > 50, f"{colour}: {hits} pixels"
