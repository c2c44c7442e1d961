"""Figures: the distribution of a protocol's estimates, and what an audit's event separates."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim.display import estimate_figure, event_axes, new_figure

__all__ = ["floor_text", "lattice_bins", "plot_audit", "plot_estimates", "plot_series"]


def _save(fig: Any, path: str, dpi: int = 120) -> None:
    # Laid out, written next to the target, then renamed: an interrupted or failed save
    # leaves no half-written figure (and no temporary file).
    import os
    import tempfile

    fig.tight_layout()
    folder, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=os.path.splitext(path)[1])
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=dpi)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 is for the temporary; the figure is the user's
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def floor_text(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals, rounded down (a lower bound is never rounded up).

    >>> floor_text(0.69279), floor_text(6.2449, 2)
    ('0.692', '6.24')
    """
    import math

    if not math.isfinite(value):
        return str(value)
    scale = 10**digits
    return f"{math.floor(value * scale) / scale:.{digits}f}"


def lattice_bins(values: np.ndarray, max_bins: int = 120) -> np.ndarray | int:
    """Histogram edges for values on a lattice a + k step (randomized response's estimates):
    each bin holds the same number of lattice points, centred on them, so no bin is empty
    or double by aliasing. Values not on a lattice get 60 equal bins.

    >>> lattice_bins(np.array([0.0, 1.5, 3.0, 4.5])).tolist()
    [-0.75, 0.75, 2.25, 3.75, 5.25]
    >>> lattice_bins(np.array([0.0, 0.3, 1.0]))
    60
    """
    v = np.unique(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    if v.size < 2:
        return 60
    gaps = np.diff(v)
    step = float(gaps.min())
    ratio = gaps / step
    if step <= 0 or not np.allclose(ratio, np.round(ratio), rtol=0, atol=1e-6):
        return 60
    points = int(round((v[-1] - v[0]) / step)) + 1
    per_bin = max(1, -(-points // max_bins))
    width = per_bin * step
    count = -(-points // per_bin)
    return v[0] - step / 2 + width * np.arange(count + 1)


def plot_estimates(path: str, est: np.ndarray, truth: np.ndarray, title: str,
                   theory_sd: float | None = None) -> None:
    """Write a histogram of per-trial estimates with the true value and the mean estimate marked.

    Estimates on a lattice (randomized response's (k - (1/2 - a) n)/(2a)) are binned on it
    (:func:`lattice_bins`); with ``theory_sd``, the normal curve N(true value, theory_sd^2)
    is drawn over it, scaled to trials per bin.

    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "est.png")
    >>> plot_estimates(f, np.array([1.0, 2.0, 3.0]), np.array([2.0]), "demo", 1.0); os.path.getsize(f) > 0
    True
    """
    est = np.asarray(est, dtype=float)
    _save(estimate_figure(est, truth, title, bins=lattice_bins(est), theory_sd=theory_sd, size=(6, 4)), path)


def plot_audit(path: str, views_x: np.ndarray, views_xp: np.ndarray, event: Any, title: str,
               estimate: dict[str, Any] | None = None) -> None:
    """Write the audit's picture: the thresholded score under x and x' with the event's cut,
    or, for a discrete event, how often the event happens under each input; with
    ``estimate`` (``p_hat``, ``q_hat``, ``trials``, ``confidence``, ``epsilon_lower``), a
    second panel shows the estimation sample's p-hat and q-hat with their Clopper–Pearson
    intervals (each side at (1 - confidence)/2, the levels the bound uses).

    ``event`` is the audit's event object (``AuditResult.event_object``).

    >>> import tempfile, os
    >>> from privsim.analysis.audit_stats import ThresholdEvent
    >>> f = os.path.join(tempfile.mkdtemp(), "audit.png")
    >>> e = ThresholdEvent(0.5, ">=", column=0, name="y")
    >>> est = {"p_hat": 0.7, "q_hat": 0.3, "trials": 1000, "confidence": 0.95, "epsilon_lower": 0.71}
    >>> plot_audit(f, np.array([[0.0], [1.0]]), np.array([[0.0], [0.2]]), e, "demo", est); os.path.getsize(f) > 0
    True
    """
    fig = new_figure(11 if estimate else 6.5, 4)
    axes = fig.subplots(1, 2 if estimate else 1, squeeze=False)[0]
    event_axes(axes[0], event, views_x, views_xp)
    if estimate:
        _estimate_panel(axes[1], estimate)
    fig.suptitle(title, fontsize=10)
    _save(fig, path)


def _estimate_panel(ax: Any, estimate: dict[str, Any]) -> None:
    # p-hat, q-hat of the estimation sample with Clopper-Pearson intervals (Clopper & Pearson 1934).
    from privsim.analysis.audit_stats import clopper_pearson

    trials, alpha = int(estimate["trials"]), (1.0 - float(estimate["confidence"])) / 2
    names = ("p-hat (numerator input)", "q-hat (denominator input)")
    for i, key in enumerate(("p_hat", "q_hat")):
        hat = float(estimate[key])
        hits = int(round(hat * trials))
        lo, hi = (float(clopper_pearson(hits, trials, alpha, side)) for side in ("lower", "upper"))
        ax.errorbar([i], [hat], yerr=[[hat - lo], [hi - hat]], fmt="o", capsize=8,
                    color=("#4c72b0", "#dd8452")[i])
        ax.text(i + 0.08, hat, f"{hat:.4g}\n[{lo:.4g}, {hi:.4g}]", va="center", fontsize=8)
    ax.set_xticks([0, 1], names, fontsize=8)
    ax.set_xlim(-0.5, 1.8)
    ax.set_ylabel("Pr[event] in the estimation sample")
    ax.set_title(f"{trials} trials per input; {1 - 2 * alpha:.0%} intervals; "
                 f"epsilon >= {floor_text(float(estimate['epsilon_lower']))}", fontsize=9)


def plot_series(path: str, released: np.ndarray, exact: np.ndarray, error_std: np.ndarray,
                theory_std: float | None, title: str) -> None:
    """Write the picture of a continual release: one trial's error at every step (its tree
    noise: correlated along shared prefixes), and the per-step error standard deviation
    over all trials (against the theoretical value when the protocol states one).

    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "series.png")
    >>> plot_series(f, np.arange(4.0) + 0.5, np.arange(4.0), np.ones(4), 1.0, "demo"); os.path.getsize(f) > 0
    True
    """
    steps = np.arange(1, len(released) + 1)
    fig = new_figure(11, 4)
    left, right = fig.subplots(1, 2)
    left.plot(steps, released - exact, color="#4c72b0", lw=1, label="released - exact (trial 0)")
    if theory_std is not None:
        left.fill_between(steps, -2 * theory_std, 2 * theory_std, color="0.85", label="+- 2 sd (theory)")
    left.axhline(0, color="#c44e52", lw=1)
    left.set_xlabel("time step")
    left.set_ylabel("error of the released running sum")
    left.legend(fontsize=8)
    right.plot(np.arange(1, len(error_std) + 1), error_std, color="#4c72b0", lw=1, label="measured error sd")
    if theory_std is not None:
        right.axhline(theory_std, color="k", ls="--", lw=1.5, label=f"theory {theory_std:.3g}")
    right.set_xlabel("time step")
    right.set_ylabel("error standard deviation")
    right.set_ylim(bottom=0)
    right.legend()
    fig.suptitle(title)
    _save(fig, path)
