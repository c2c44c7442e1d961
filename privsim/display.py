"""Results that display themselves: a plain ``repr`` that fits 100 columns, and, in a
notebook, a compact HTML table with an inline figure where a picture helps.

:class:`~privsim.SimulationResult`, :class:`~privsim.View` and :class:`~privsim.Privacy`
(a claim) live in lower layers than this module (docs/architecture.md, "Layers"), so this
module gives them their ``__repr__`` and ``_repr_html_`` when it is imported (``import
privsim`` imports it); :class:`~privsim.analysis.audit.AuditResult`, in this module's own
layer, calls it from its methods. What each shows:

- a simulation result: what ran, what it cost, how well it estimated, and the histogram
  of its estimates against the truth;
- a coalition's view: who, how many values, and the first trial's messages;
- an audit: the verdict, the bound, the event and how it was chosen, and a figure of both
  inputs' score distributions (a fresh sample, as ``privsim audit --plot`` draws) with the
  chosen event shaded, beside the claim's epsilon(delta) curve and the bound;
- a claim: its measure and values, and its epsilon(delta) curve.

Figures are PNGs inlined as base64, drawn on matplotlib ``Figure`` objects (never pyplot's
global state, so a notebook does not show them twice), so a saved notebook shows them
anywhere.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from privsim.privacy import Privacy
from privsim.simulate import SimulationResult
from privsim.views import View

__all__ = [
    "WIDTH", "audit_figure", "audit_html", "audit_repr", "audit_rows", "claim_figure", "claim_html",
    "estimate_figure", "event_axes", "figure_html", "fit", "new_figure", "number_text", "simulation_html",
    "simulation_repr", "table_html", "verdict", "view_html", "view_repr",
]

#: The widest line a plain ``repr`` prints.
WIDTH = 100

#: Trials per input of the fresh sample an audit's figure draws.
AUDIT_FIGURE_TRIALS = 2048

_BLUE, _ORANGE, _RED = "#4c72b0", "#dd8452", "#c44e52"


def number_text(value: Any) -> str:
    """A number to four significant digits; anything else as ``str``.

    >>> number_text(0.693147), number_text(1234567), number_text(None)
    ('0.6931', '1 234 567', 'None')
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return f"{int(value):,}".replace(",", " ") if abs(int(value)) >= 10**5 else str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    return str(value)


def fit(lines: Sequence[str], width: int = WIDTH) -> str:
    """``lines`` joined, each cut to ``width`` columns (ending in ``...`` where cut).

    >>> fit(["short", "x" * 120]).splitlines()[1][-5:], max(map(len, fit(["x" * 120]).splitlines()))
    ('xx...', 100)
    """
    return "\n".join(line if len(line) <= width else line[: width - 3] + "..." for line in lines)


def table_html(title: str, rows: Sequence[tuple[str, Any]]) -> str:
    """A two-column HTML table (name, value) under ``title``; values are escaped.

    >>> table_html("run", [("messages", 4)]).count("<tr>")
    1
    """
    body = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
                   f"<td style='text-align:left'>{html.escape(number_text(v))}</td></tr>" for k, v in rows)
    return (f"<div class='privsim'><strong>{html.escape(title)}</strong>"
            f"<table style='border-collapse:collapse;font-size:90%'>{body}</table></div>")


def new_figure(width: float, height: float) -> Any:
    """A matplotlib ``Figure`` outside pyplot (no global state, no interactive backend).

    >>> new_figure(2, 1).get_size_inches().tolist()
    [2.0, 1.0]
    """
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def figure_html(fig: Any, alt: str) -> str:
    """``fig`` as an inline ``<img>`` (a base64 PNG).

    >>> figure_html(new_figure(1, 1), "empty").startswith("<img alt='empty' src='data:image/png;base64,")
    True
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f"<img alt='{html.escape(alt, quote=True)}' src='data:image/png;base64,{data}'/>"


# --- a simulation result -------------------------------------------------------------------


def _simulation_rows(res: Any) -> list[tuple[str, Any]]:
    err = np.asarray(res.estimate, dtype=float) - np.asarray(res.true_value, dtype=float)
    rows = [("protocol", res.protocol.name), ("n, t", f"{res.n}, {res.t}"), ("trials", res.trials),
            ("seed", res.seed), ("messages", res.messages), ("bits", res.bits), ("rounds", res.rounds)]
    if err.size:
        rows += [("true value (mean)", float(np.mean(res.true_value))),
                 ("estimate mean", float(np.mean(res.estimate))), ("estimate std", float(np.std(res.estimate))),
                 ("rmse", float(np.sqrt(np.mean(err**2))))]
    if getattr(res, "wire_bytes", None) is not None:
        rows.append(("bytes on the wire", res.wire_bytes))
    return rows


def simulation_repr(res: Any) -> str:
    """The plain ``repr`` of a :class:`~privsim.SimulationResult`: three lines, <= 100 columns.

    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> print(privsim.simulate(RandomizedResponse(), [0, 1, 1], trials=10, seed=1))  # doctest: +ELLIPSIS
    SimulationResult(randomized-response, n=3, t=2, trials=10, seed=1)
      cost per run: messages 3, bits 3, rounds 1
      estimate: mean ..., std ..., rmse ... (true value 2)
    """
    rows = dict(_simulation_rows(res))
    lines = [f"SimulationResult({res.protocol.name}, n={res.n}, t={res.t}, trials={res.trials}, seed={res.seed})",
             f"  cost per run: messages {res.messages}, bits {res.bits}, rounds {res.rounds}"]
    if "rmse" in rows:
        lines.append(f"  estimate: mean {number_text(rows['estimate mean'])}, std {number_text(rows['estimate std'])}, "
                     f"rmse {number_text(rows['rmse'])} (true value {number_text(rows['true value (mean)'])})")
    return fit(lines)


def estimate_figure(estimate: np.ndarray, truth: np.ndarray, title: str = "", *, bins: Any = None,
                    theory_sd: float | None = None, size: tuple[float, float] = (5, 2.8)) -> Any:
    """A matplotlib figure: the histogram of the estimates, the true value and the mean marked.

    ``bins`` as numpy takes them (``None``: numpy's ``"auto"``, at most 80); with ``theory_sd``,
    the normal curve N(true value, theory_sd^2) is drawn over the histogram, scaled to trials
    per bin; ``size`` in inches.

    >>> fig = estimate_figure(np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0]))
    >>> [line.get_label() for line in fig.axes[0].lines]
    ['true value', 'mean estimate']
    """
    est = np.asarray(estimate, dtype=float).ravel()
    if bins is None:
        edges = np.histogram_bin_edges(est, bins="auto")
        bins = edges if len(edges) <= 81 else 80
    fig = new_figure(*size)
    ax = fig.subplots()
    _, edges, _ = ax.hist(est, bins=bins, color=_BLUE, alpha=0.85, label="estimates")
    center = float(np.mean(truth))
    if theory_sd is not None and theory_sd > 0:
        from scipy.stats import norm

        grid = np.linspace(min(edges[0], center - 4 * theory_sd), max(edges[-1], center + 4 * theory_sd), 400)
        width = float(np.mean(np.diff(edges)))
        ax.plot(grid, est.size * width * norm.pdf(grid, center, theory_sd), color="k", lw=1.5,
                label=f"normal, sd {theory_sd:.4g} (theory)")
    ax.axvline(center, color=_RED, lw=2, label="true value")
    ax.axvline(float(np.mean(est)), color="k", ls="--", lw=1, label="mean estimate")
    ax.set_xlabel("estimate")
    ax.set_ylabel("trials per bin")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def simulation_html(res: Any) -> str:
    """A :class:`~privsim.SimulationResult` in a notebook: its table and its estimates' histogram.

    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> page = simulation_html(privsim.simulate(RandomizedResponse(), [0, 1], trials=50, seed=1))
    >>> "<table" in page, "data:image/png" in page
    (True, True)
    """
    table = table_html(f"SimulationResult: {res.protocol.name}", _simulation_rows(res))
    est = np.asarray(res.estimate)
    if est.ndim != 1 or est.size < 2:
        return table
    fig = figure_html(estimate_figure(est, res.true_value, f"{res.trials} estimates"), "estimates against the truth")
    return f"<div style='display:flex;gap:2em;align-items:flex-start'>{table}{fig}</div>"


# --- a coalition's view --------------------------------------------------------------------


def _short(value: Any, trial: int = 0) -> str:
    a = np.asarray(value)
    v = a[trial] if a.ndim and a.shape[0] > trial else a
    text = np.array2string(np.asarray(v), precision=4, threshold=6) if np.ndim(v) else number_text(v.item())
    return text if len(text) <= 40 else text[:37] + "..."


def view_repr(view: Any) -> str:
    """The plain ``repr`` of a :class:`~privsim.View`: who, how much, the first columns.

    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> print(privsim.simulate(RandomizedResponse(), [0, 1, 1], trials=4, seed=1).view("C"))
    View(coalition {C}, trials=4): 4 values per trial: 3 messages, 0 inputs, 0 draws, 1 outputs
      columns: msg r1 0->C, msg r1 1->C, msg r1 2->C, output C
    """
    cols = view.columns()
    draws = sum(len(d) for d in view.randomness.values())
    lines = [f"View(coalition {{{','.join(map(str, view.coalition))}}}, trials={view.trials}): {len(cols)} values "
             f"per trial: {len(view.messages)} messages, {len(view.inputs)} inputs, {draws} draws, "
             f"{len(view.outputs)} outputs",
             "  columns: " + ", ".join(cols)]
    return fit(lines)


def view_html(view: Any, max_rows: int = 12) -> str:
    """A :class:`~privsim.View` in a notebook: its summary and the first trial's messages.

    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> page = view_html(privsim.simulate(RandomizedResponse(), [0, 1, 1], trials=4, seed=1).view("C"))
    >>> page.count("<tr>") >= 4 + 3
    True
    """
    cols = view.columns()
    rows = [("coalition", "{" + ",".join(map(str, view.coalition)) + "}"), ("trials", view.trials),
            ("values per trial", len(cols)), ("messages", len(view.messages)),
            ("inputs", ", ".join(f"{k}: {_short(v)}" for k, v in view.inputs.items()) or "none"),
            ("random draws", sum(len(d) for d in view.randomness.values())),
            ("outputs", ", ".join(f"{k}: {_short(v)}" for k, v in view.outputs.items()) or "none")]
    head = "<tr><th>round</th><th>from</th><th>to</th><th>value (trial 0)</th></tr>"
    body = "".join(f"<tr><td>{r}</td><td>{html.escape(str(s))}</td><td>{html.escape(str(d))}</td>"
                   f"<td>{html.escape(_short(v))}</td></tr>" for r, s, d, v in view.messages[:max_rows])
    more = len(view.messages) - max_rows
    note = f"<div>... and {more} more messages</div>" if more > 0 else ""
    messages = (f"<div><strong>messages</strong><table style='font-size:90%'>{head}{body}</table>{note}</div>"
                if view.messages else "")
    return (f"<div style='display:flex;gap:2em;align-items:flex-start'>{table_html('View', rows)}{messages}</div>")


# --- a claim -------------------------------------------------------------------------------


def _claim_from_dict(claim: dict[str, Any] | None) -> Any:
    if claim is None:
        return None
    measure = claim["measure"]
    if measure == "zcdp":
        return Privacy.zcdp(claim["rho"], delta=claim["delta"])
    if measure == "gaussian":
        return Privacy.gaussian(claim["mu"], delta=claim["delta"])
    return Privacy(claim["epsilon"], claim["delta"])


def _claim_axes(ax: Any, claim: Any, mark: tuple[float, float] | None = None) -> None:
    deltas = np.logspace(-12, -0.5, 60)
    curve = np.array([claim.epsilon_at(float(d)) for d in deltas], dtype=float)  # None (no epsilon): nan
    ax.semilogx(deltas, curve, color="k", lw=1.5, label=f"claim: {claim.describe()}")
    if mark is not None:
        d, eps = mark
        ax.plot([max(d, 1e-12)], [eps], "o", color=_RED, label=f"audit: epsilon >= {eps:.3g} at delta {d:.3g}")
    ax.set_xlabel("delta")
    ax.set_ylabel("epsilon the claim implies")
    ax.legend(fontsize=7)


def claim_figure(claim: Any) -> Any:
    """A matplotlib figure: the epsilon a claim implies at every delta (its curve).

    >>> from privsim import Privacy
    >>> claim_figure(Privacy.zcdp(0.5)).axes[0].get_xlabel()
    'delta'
    """
    fig = new_figure(4.5, 2.8)
    ax = fig.subplots()
    _claim_axes(ax, claim)
    fig.tight_layout()
    return fig


def claim_html(claim: Any) -> str:
    """A :class:`~privsim.Privacy` claim in a notebook: its values and its epsilon(delta) curve.

    >>> from privsim import Privacy
    >>> page = claim_html(Privacy.zcdp(0.5))
    >>> "zcdp" in page, "data:image/png" in page
    (True, True)
    """
    rows = [(k, v) for k, v in claim.to_dict().items() if k != "assumption"]  # shown last, as "assuming"
    if claim.paper is not None:
        rows.append(("the paper's claim", claim.paper.describe()))
    if claim.assumption:
        rows.append(("assuming", claim.assumption))
    table = table_html(f"Privacy: {claim.describe()}", rows)
    return (f"<div style='display:flex;gap:2em;align-items:flex-start'>{table}"
            f"{figure_html(claim_figure(claim), 'the claim: epsilon against delta')}</div>")


# --- an audit ------------------------------------------------------------------------------


def verdict(r: Any) -> str:
    """An audit's verdict in words: ``"VIOLATED"``, ``"not violated"`` or ``"no verdict"``.

    Example: ``verdict(audit(...))`` is ``"not violated"`` when the bound stays within the claim.
    """
    if r.violated is None:
        return "no verdict"
    return "VIOLATED" if r.violated else "not violated"


def audit_rows(r: Any) -> list[tuple[str, Any]]:
    """An audit's table rows: verdict, bound, claim, event, selection, what was searched.

    Example: ``dict(audit_rows(r))["verdict"] == verdict(r)``.
    """
    claimed = ("nothing" if r.epsilon_claimed is None
               else f"epsilon {number_text(r.epsilon_claimed)} at delta {number_text(r.delta)}")
    rows = [("protocol", r.protocol), ("coalition vs neighbour", f"{{{','.join(r.coalition)}}} vs party {r.neighbor}"),
            ("verdict", verdict(r)), ("epsilon_lower", f"{number_text(r.epsilon_lower)} ({r.confidence:.0%})"),
            ("claimed", claimed), ("why", r.reason), ("event", r.event), ("chosen by", r.selection),
            *([("carried into estimation", "; ".join(
                f"{c['selection']} {number_text(c['epsilon_lower'])}" for c in r.candidates)
                + f" (each at {r.confidence_each:.4g})")] if len(r.candidates) > 1 else []),
            ("p_hat, q_hat", f"{number_text(r.p_hat)}, {number_text(r.q_hat)}"),
            ("searched", f"{r.features} view columns; {r.trials_select} trials per input to choose the event, "
                         f"{r.trials_estimate} to bound it"),
            ("trials, seed", f"{r.trials}, {r.seed}")]
    if r.paper_claim is not None:
        rows.append(("the paper's claim", f"{_claim_from_dict(r.paper_claim).describe()} "
                                          f"(violated: {r.paper_violated})"))
    return rows


def audit_repr(r: Any) -> str:
    """The plain ``repr`` of an :class:`~privsim.analysis.audit.AuditResult`: four lines, <= 100 columns.

    Example: ``print(audit(RandomizedResponse(), [0, 1], coalition="C", neighbor=1, trials=4096, seed=1))``
    prints ``AuditResult(randomized-response, {C} vs party 1, trials=4096, seed=1): not violated``,
    then the bound against the claim, the event, and how it was chosen (tests/test_notebook.py
    checks these lines).
    """
    claimed = "nothing claimed" if r.epsilon_claimed is None else f"the claimed {number_text(r.epsilon_claimed)}"
    lines = [f"AuditResult({r.protocol}, {{{','.join(r.coalition)}}} vs party {r.neighbor}, trials={r.trials}, "
             f"seed={r.seed}): {verdict(r)}",
             f"  epsilon_lower {number_text(r.epsilon_lower)} ({r.confidence:.0%}) against {claimed} "
             f"at delta {number_text(r.delta)}",
             f"  event: {r.event}",
             f"  chosen by {r.selection}; p_hat {number_text(r.p_hat)}, q_hat {number_text(r.q_hat)}"]
    return fit(lines)


def event_axes(ax: Any, event: Any, views_x: np.ndarray, views_xp: np.ndarray) -> None:
    """Draw on ``ax`` both inputs' scores with the event shaded (or, for a discrete event, how
    often it happens under each input): the left panel of :func:`audit_figure` and of
    :func:`privsim.analysis.plots.plot_audit`.

    Example: ``event_axes(new_figure(5, 3).subplots(), r.event_object, *r.sampler(512))`` for an
    audit result ``r``.
    """
    values = getattr(event, "values", None)
    if values is not None:
        vx, vxp = np.asarray(values(views_x), float), np.asarray(values(views_xp), float)
        both = np.concatenate([vx, vxp])
        lo, hi = np.quantile(both, [0.001, 0.999]) if both.size else (0.0, 1.0)
        cut = float(event.cut)
        lo, hi = float(min(lo, cut)), float(max(hi, cut))
        bins = np.linspace(lo, hi, 60) if hi > lo else 10
        ax.hist(vx, bins=bins, alpha=0.55, density=True, color=_BLUE, label="under x")
        ax.hist(vxp, bins=bins, alpha=0.55, density=True, color=_ORANGE, label="under x'")
        a, b = (cut, hi) if event.op in (">=", ">") else (lo, cut)
        ax.axvspan(a, b, color="#55a868", alpha=0.18, label="the event")
        ax.axvline(cut, color="#55a868", lw=1.5)
        ax.set_xlabel(getattr(event, "name", "score"))
        ax.set_ylabel("density")
    else:
        inside = [float(event.contains(views_x).mean()), float(event.contains(views_xp).mean())]
        x = np.arange(2)
        ax.bar(x - 0.2, inside, 0.4, color="#55a868", alpha=0.6, label="in the event")
        ax.bar(x + 0.2, [1 - p for p in inside], 0.4, color="#bbbbbb", label="outside it")
        ax.set_xticks(x, ["under x", "under x'"])
        ax.set_ylabel("fraction of a fresh sample")
    ax.set_title(fit([f"event: {event.describe()}"], 70), fontsize=8)
    ax.legend(fontsize=7)


def audit_figure(r: Any, views_x: np.ndarray, views_xp: np.ndarray) -> Any:
    """A matplotlib figure of an audit: both inputs' scores (or, for a discrete event, how
    often it happens) with the event shaded; beside it, the claim's epsilon(delta) curve
    and the bound.

    ``views_x`` and ``views_xp`` are fresh views under x and x' (not the audit's own
    samples, which it does not keep): see :func:`audit_html`.

    Example: ``audit_figure(r, *r.sampler(512))`` for an audit result ``r`` (:func:`audit_html`
    draws it, and its doctest runs it).
    """
    claim = _claim_from_dict(r.claim)
    fig = new_figure(9.5, 3)
    axes = fig.subplots(1, 2)
    event_axes(axes[0], r.event_object, views_x, views_xp)
    if claim is not None:
        _claim_axes(axes[1], claim, (r.delta, r.epsilon_lower))
    else:
        axes[1].axhline(r.epsilon_lower, color=_RED, label=f"audit: epsilon >= {r.epsilon_lower:.3g}")
        axes[1].set_title("no claim for this coalition", fontsize=8)
        axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def audit_html(r: Any, sample_trials: int = AUDIT_FIGURE_TRIALS) -> str:
    """An :class:`~privsim.analysis.audit.AuditResult` in a notebook: its table, and the
    figure of :func:`audit_figure` over a fresh sample of ``sample_trials`` views per input
    (drawn from seeds derived from the audit's, as ``privsim audit --plot`` does).

    >>> from privsim.analysis.audit import audit
    >>> from privsim.protocols import RandomizedResponse
    >>> page = audit_html(audit(RandomizedResponse(), [0, 1], coalition="C", neighbor=1, trials=4096, seed=1), 256)
    >>> "not violated" in page, page.count("data:image/png")
    (True, 1)
    """
    table = table_html(f"AuditResult: {verdict(r)}", audit_rows(r))
    if r.sampler is None or r.event_object is None:
        return table
    views = r.sampler(min(int(sample_trials), r.trials))
    fig = figure_html(audit_figure(r, *views), "both inputs' distributions, the event, the claim and the bound")
    return f"<div>{table}{fig}</div>"


def _install() -> None:
    # The lower layers' classes get their displays here (see the module's docstring).
    SimulationResult.__repr__ = simulation_repr  # type: ignore[method-assign]
    SimulationResult._repr_html_ = simulation_html  # type: ignore[attr-defined]
    View.__repr__ = view_repr  # type: ignore[method-assign]
    View._repr_html_ = view_html  # type: ignore[attr-defined]
    Privacy._repr_html_ = claim_html  # type: ignore[attr-defined]


_install()
