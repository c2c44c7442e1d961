"""The documentation's figures, checked against the benchmarks that produce them.

Every measured figure the docs state (``docs/**.md``) and that a benchmark suite
(``bench/bench_*.py``) computes is listed once in ``docs/figures.toml``: the page, the
text as it stands there, the suite and the key of its result, and what the text means
(``low``..``high``, or ``value`` with a tolerance ``tol``). ``privsim bench --check-docs``
runs the suites concerned and compares; a test checks that every listed text is still on
its page and re-runs the cheap (exact, untimed) suites.

Timing figures depend on the machine and its load: ``slack`` (default 1.5 for a
``timing`` entry, 0 otherwise) widens their band by that factor on each side, so a check
flags a figure that is wrong, not one measured on a busy afternoon.

Examples
--------
>>> f = Figure(page="p.md", text="2.0–2.5x", suite="engine", key="a.b", low=2.0, high=2.5, timing=True)
>>> f.band(), f.holds(2.9), f.holds(4.0)
((1.3333333333333333, 3.75), True, False)
>>> f.lookup({"a": {"b": 2.2}})
2.2
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privsim.errors import ParameterError

__all__ = ["Figure", "check", "load_figures"]


@dataclass(frozen=True)
class Figure:
    """One figure of the docs: where it stands, which benchmark key produces it, what it says.

    Examples
    --------
    >>> Figure(page="p.md", text="1.05", suite="fastgame", key="flatness_ratio", value=1.05, tol=0.1).band()
    (0.9500000000000001, 1.1500000000000001)
    """

    page: str
    text: str
    suite: str
    key: str
    low: float = math.nan
    high: float = math.nan
    value: float = math.nan
    tol: float = 0.0
    timing: bool = False
    slack: float = math.nan
    cheap: bool = False

    def band(self) -> tuple[float, float]:
        """The accepted interval: [low, high] (or value +- tol), widened by ``slack`` for timings."""
        lo, hi = (self.value - self.tol, self.value + self.tol) if math.isfinite(self.value) else (self.low, self.high)
        slack = self.slack if math.isfinite(self.slack) else (1.5 if self.timing else 1.0)
        return lo / slack, hi * slack

    def holds(self, measured: float) -> bool:
        """Whether ``measured`` is in :meth:`band`."""
        lo, hi = self.band()
        return lo <= measured <= hi

    def lookup(self, results: dict[str, Any]) -> float:
        """The figure's value in a suite's result (``key`` is a dotted path)."""
        node: Any = results
        for part in self.key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise ParameterError(f"figures: suite {self.suite!r} has no result {self.key!r} "
                                     f"(listed for {self.page}: {self.text!r})")
            node = node[part]
        return float(node)


def load_figures(path: Path) -> list[Figure]:
    """The figures listed in ``path`` (a TOML file of ``[[figure]]`` tables).

    Raises
    ------
    ParameterError
        If the file is missing or an entry lacks a field or states no value.

    Examples
    --------
    >>> from pathlib import Path
    >>> load_figures(Path("/nonexistent.toml"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    privsim.errors.ParameterError: figures: cannot read /nonexistent.toml: ...
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ParameterError(f"figures: cannot read {path}: {exc}") from None
    out = []
    for i, entry in enumerate(data.get("figure", [])):
        try:
            fig = Figure(**entry)
        except TypeError as exc:
            raise ParameterError(f"figures: entry {i + 1} of {path}: {exc}") from None
        if not (math.isfinite(fig.value) or (math.isfinite(fig.low) and math.isfinite(fig.high))):
            raise ParameterError(f"figures: entry {i + 1} of {path} ({fig.text!r}) states neither value nor low/high")
        out.append(fig)
    return out


def check(figures: list[Figure], results: dict[str, dict[str, Any]]) -> list[tuple[Figure, float, bool]]:
    """Each figure whose suite was run, with its measured value and whether it holds.

    Examples
    --------
    >>> f = Figure(page="p.md", text="2x", suite="s", key="k", value=2.0, tol=0.1)
    >>> check([f], {"s": {"k": 2.05}, "other": {}})[0][1:]
    (2.05, True)
    """
    measured = [(f, f.lookup(results[f.suite])) for f in figures if f.suite in results]
    return [(f, value, f.holds(value)) for f, value in measured]
