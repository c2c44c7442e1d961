"""Figures: the distribution of a protocol's estimates, and what an audit's event separates."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["plot_audit", "plot_estimates", "plot_series"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_estimates(path: str, est: np.ndarray, truth: np.ndarray, title: str) -> None:
    """Write a histogram of per-trial estimates with the true value and the mean estimate marked.

    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "est.png")
    >>> plot_estimates(f, np.array([1.0, 2.0, 3.0]), np.array([2.0]), "demo"); os.path.getsize(f) > 0
    True
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.hist(est, bins=60, color="#4c72b0", alpha=0.85)
    ax.axvline(float(np.mean(truth)), color="#c44e52", lw=2, label="true value")
    ax.axvline(float(np.mean(est)), color="k", ls="--", lw=1, label="mean estimate")
    ax.set_xlabel("estimate")
    ax.set_ylabel("trials")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_audit(path: str, views_x: np.ndarray, views_xp: np.ndarray, event: Any, title: str) -> None:
    """Write the audit's picture: the thresholded score under x and x' with the event's cut,
    or, for a discrete event, how often the event happens under each input.

    ``event`` is the audit's event object (``AuditResult.event_object``).

    >>> import tempfile, os
    >>> from privsim.analysis.audit_stats import ThresholdEvent
    >>> f = os.path.join(tempfile.mkdtemp(), "audit.png")
    >>> e = ThresholdEvent(0.5, ">=", column=0, name="y")
    >>> plot_audit(f, np.array([[0.0], [1.0]]), np.array([[0.0], [0.2]]), e, "demo"); os.path.getsize(f) > 0
    True
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    values = getattr(event, "values", None)
    if values is not None:
        vx, vxp = values(views_x), values(views_xp)
        lo, hi = np.quantile(np.concatenate([vx, vxp]), [0.001, 0.999])
        bins = np.linspace(lo, hi, 80) if hi > lo else 20
        ax.hist(vx, bins=bins, alpha=0.55, density=True, label="views under x", color="#4c72b0")
        ax.hist(vxp, bins=bins, alpha=0.55, density=True, label="views under x'", color="#dd8452")
        ax.axvline(event.cut, color="k", lw=2, label=f"event: {event.describe()}")
        ax.set_xlabel(getattr(event, "name", "score"))
        ax.set_ylabel("density")
    else:
        px, pxp = event.contains(views_x).mean(), event.contains(views_xp).mean()
        ax.bar(["under x", "under x'"], [px, pxp], color=["#4c72b0", "#dd8452"])
        for i, p in enumerate((px, pxp)):
            ax.text(i, p, f"{p:.4f}", ha="center", va="bottom")
        ax.set_ylabel(f"Pr[{event.describe()}]")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8) if values is not None else None
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    plt = _pyplot()
    steps = np.arange(1, len(released) + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
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
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
