"""``privsim report``: one self-contained page, checked in a real headless browser
(Chromium): it loads with no console message or script error, needs no network, and its
screenshot shows every section (each section's band of the screenshot is drawn on, and
those with figures hold colour)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from privsim.report import REPORT_SECTIONS

ROOT = Path(__file__).resolve().parent.parent
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
FIGURES = ("schedule", "cost", "estimates", "audit")


def chromium(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--force-device-scale-factor=1", "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    from privsim.cli import main

    out = tmp_path_factory.mktemp("report") / "audit_rr.html"
    main(["report", str(ROOT / "scenarios" / "audit_randomized_response.toml"), "-o", str(out), "--trials", "4096"])
    return out


def test_report_is_one_self_contained_page_with_every_section(page):
    text = page.read_text()
    assert [s for s in REPORT_SECTIONS if f"<section id='{s}'>" in text] == list(REPORT_SECTIONS)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # nothing to fetch
    assert text.count("<svg") >= 4  # the schedule, messages and bits, estimates, the audit's distributions
    assert "Verdict: not violated" in text and "What was searched" in text and "Clopper" in text
    assert "coalition {C}" in text and "lonely" in text


def test_report_refuses_a_path_that_is_not_html(tmp_path, capsys):
    from privsim.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["report", str(ROOT / "scenarios" / "randomized_response.toml"), "-o", str(tmp_path / "page.png")])
    assert exc.value.code == 2 and "the report is an .html file" in capsys.readouterr().err


@pytest.mark.skipif(BROWSER is None, reason="no Chromium: install the Debian package chromium (.ci/run does)")
def test_report_in_a_headless_browser(page, tmp_path):
    dom = chromium("--window-size=1280,900", "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console  # no console message, no uncaught error, no failed load
    body = re.search(r"<body([^>]*)>", dom.stdout).group(1)
    assert "data-errors" not in body
    sections = json.loads(re.search(r'data-sections="([^"]*)"', body).group(1).replace("&quot;", '"'))
    height = int(re.search(r'data-height="(\d+)"', body).group(1))
    assert [s["id"] for s in sections] == list(REPORT_SECTIONS)

    shot = tmp_path / "report.png"
    run = chromium(f"--window-size=1280,{height}", f"--screenshot={shot}", page.as_uri())
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[0] >= height - 1
    for s in sections:
        band = pixels[int(s["top"]): int(s["top"] + s["height"])]
        drawn = (band < 0.9).any(axis=2).mean()
        assert band.shape[0] > 40 and drawn > 0.005, (s["id"], band.shape, drawn)
        if s["id"] in FIGURES:  # a figure: coloured pixels (the palette's blue, orange or green)
            colour = np.ptp(band, axis=2) > 0.1
            assert colour.mean() > 0.001, (s["id"], colour.mean())
