"""The docs' figures (docs/figures.toml) stand on their pages, and the cheap ones still hold (issue 27)."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path

import pytest

from privsim import figures
from privsim.errors import ParameterError
from privsim.figures import Figure, check, load_figures

ROOT = Path(__file__).resolve().parents[1]
FIGURES = load_figures(ROOT / "docs" / "figures.toml")


def test_doctests() -> None:
    assert doctest.testmod(figures).failed == 0


@pytest.mark.parametrize("fig", FIGURES, ids=lambda f: f"{f.suite}.{f.key}")
def test_every_listed_figure_stands_on_its_page(fig: Figure) -> None:
    # a page edited without its entry here (or the reverse) fails
    assert fig.text in (ROOT / fig.page).read_text(encoding="utf-8")
    assert (ROOT / "bench" / f"bench_{fig.suite}.py").is_file()


def test_the_cheap_figures_hold_through_the_cli() -> None:
    suites = sorted({f.suite for f in FIGURES if f.cheap})
    assert suites == ["exact_integer"]
    args = [arg for s in suites for arg in ("--only", s)]
    done = subprocess.run([sys.executable, "-m", "privsim", "bench", "--check-docs", *args, "--json"],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    verdicts = json.loads(done.stdout)["figures"]
    assert len(verdicts) == sum(f.cheap for f in FIGURES) and all(v["holds"] for v in verdicts)


def test_a_figure_off_its_band_is_flagged_and_a_bad_entry_refused(tmp_path: Path) -> None:
    wrong = Figure(page="p.md", text="1.5x", suite="s", key="k", value=1.5, tol=0.01)
    (_, measured, holds), = check([wrong], {"s": {"k": 2.0}})
    assert measured == 2.0 and not holds
    timing = Figure(page="p.md", text="1.5x", suite="s", key="k", value=1.5, tol=0.0, timing=True)
    assert check([timing], {"s": {"k": 2.0}})[0][2] and not check([timing], {"s": {"k": 2.5}})[0][2]
    with pytest.raises(ParameterError, match="no result"):
        check([wrong], {"s": {}})
    bad = tmp_path / "figures.toml"
    bad.write_text('[[figure]]\npage = "p.md"\ntext = "x"\nsuite = "s"\nkey = "k"\n')
    with pytest.raises(ParameterError, match="neither value nor low/high"):
        load_figures(bad)
