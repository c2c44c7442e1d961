"""``privsim report SCENARIO -o page.html``: one self-contained HTML page about a scenario.

The page needs no network to be viewed: its figures are inline SVG (matplotlib), its
style is inline, and its one small script only records the page's layout (for tests) and
any error. Its sections:

- **scenario**: what runs (protocol, parameters, n, t, trials, seed, inputs) and the
  scenario's own comment;
- **schedule**: the declared channels as a graph (networkx layout), parties coloured lonely
  (at most t channels: their neighbours see all they send and receive) or popular, the
  curator drawn as a square and the coalition ringed;
- **cost**: messages and bits per round;
- **estimates**: the estimates' distribution against the true value;
- **view**: a summary of the coalition's view (the scenario's coalition, else the curator,
  else party 0) and its first trial's messages;
- **audit** (for a scenario with ``coalition`` and ``neighbor``): the verdict, the bound
  against the claim, the event, both inputs' distributions with the event shaded, and
  what was searched (the selectors that competed, the view's columns, the trials spent
  choosing the event and bounding it).
"""

from __future__ import annotations

import html
import io
import math
from itertools import takewhile
from pathlib import Path
from typing import Any

import numpy as np

from privsim.display import estimate_figure, new_figure, number_text, view_html
from privsim.errors import ParameterError
from privsim.network.messages import message_bits
from privsim.scenario import RunSpec, make_inputs
from privsim.simulate import simulate

__all__ = ["REPORT_SECTIONS", "build_report", "check_report_path", "schedule_figure", "write_report"]

#: The ``id`` of every section, in page order (``audit`` only for an audit scenario).
REPORT_SECTIONS = ("scenario", "schedule", "cost", "estimates", "view", "audit")

#: Runs recorded for the coalition's view and the messages' bits (the estimates use all trials).
VIEW_TRIALS = 16

_LONELY, _POPULAR, _MARK = "#dd8452", "#4c72b0", "#c44e52"

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; background: #fff; padding: 0 1em; }
nav a { margin-right: 1em; }
section { border-top: 1px solid #ccc; padding: 0.5em 0 1em 0; }
table { border-collapse: collapse; font-size: 90%; }
th, td { text-align: left; padding: 0.1em 0.8em 0.1em 0; vertical-align: top; }
.fig { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
.verdict-violated { color: #b00; font-weight: bold; }
pre { white-space: pre-wrap; background: #f6f6f6; padding: 0.5em; }
"""

# Records each section's box on <body> (read by the browser test) and any script error.
_SCRIPT = """
window.addEventListener("error", function (e) { document.body.dataset.errors = String(e.message); });
window.addEventListener("load", function () {
  var boxes = Array.prototype.map.call(document.querySelectorAll("section"), function (s) {
    var r = s.getBoundingClientRect();
    return {id: s.id, top: r.top + window.scrollY, height: r.height};
  });
  document.body.dataset.sections = JSON.stringify(boxes);
  document.body.dataset.height = String(document.documentElement.scrollHeight);
});
"""


def check_report_path(path: str | Path) -> Path:
    """``path`` if a report can be written there (an ``.html`` file in an existing folder).

    >>> check_report_path("page.html").name
    'page.html'
    >>> check_report_path("page.png")
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: --output: the report is an .html file (got page.png)
    """
    p = Path(path)
    if p.suffix.lower() not in (".html", ".htm"):
        raise ParameterError(f"--output: the report is an .html file (got {p})")
    if not p.parent.is_dir():
        raise ParameterError(f"--output: folder {p.parent} does not exist")
    return p


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]  # inline: no XML prolog or doctype


def schedule_figure(schedule: Any, t: int, coalition: Any = (), seed: int = 0) -> Any:
    """The schedule's channels as a graph: lonely parties orange, popular blue, the
    curator a square, the coalition ringed in red.

    >>> from privsim.protocols import RandomizedResponse
    >>> fig = schedule_figure(RandomizedResponse().cached_schedule(6, 0), 0, ["C"])
    >>> fig.axes[0].get_title()
    'schedule: 6 messages in 1 rounds; 0 lonely, 7 popular (t = 0)'
    """
    import networkx as nx

    g = schedule.graph()
    lonely = set(schedule.lonely(t))
    members = {str(m) for m in coalition}
    n = g.number_of_nodes()
    pos = nx.spring_layout(g, seed=seed, iterations=50 if n <= 300 else 20)
    fig = new_figure(6.5, 5)
    ax = fig.subplots()
    size = max(12.0, min(300.0, 4000.0 / max(n, 1)))
    nx.draw_networkx_edges(g, pos, ax=ax, alpha=0.25 if g.number_of_edges() < 2000 else 0.08, width=0.8)
    for shape, nodes in (("o", [p for p in g if not isinstance(p, str)]), ("s", [p for p in g if isinstance(p, str)])):
        if not nodes:
            continue
        colours = [_LONELY if p in lonely else _POPULAR for p in nodes]
        edge = [_MARK if str(p) in members else "white" for p in nodes]
        widths = [2.5 if str(p) in members else 0.5 for p in nodes]
        nx.draw_networkx_nodes(g, pos, nodelist=nodes, node_color=colours, edgecolors=edge, linewidths=widths,
                               node_shape=shape, node_size=size * (2 if shape == "s" else 1), ax=ax)
    if n <= 40:
        nx.draw_networkx_labels(g, pos, ax=ax, font_size=7)
    handles = [ax.scatter([], [], color=_LONELY, label=f"lonely (<= {t} channels)"),
               ax.scatter([], [], color=_POPULAR, label=f"popular (>= {t + 1} channels)")]
    if members:
        handles.append(ax.scatter([], [], facecolor="none", edgecolor=_MARK, linewidth=2,
                                  label="coalition {" + ",".join(sorted(members)) + "}"))
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    ax.set_title(f"schedule: {schedule.messages} messages in {schedule.rounds} rounds; {len(lonely)} lonely, "
                 f"{n - len(lonely)} popular (t = {t})", fontsize=9)
    ax.set_axis_off()
    fig.tight_layout()
    return fig


def _cost_figure(messages: list[int], bits: list[int]) -> Any:
    fig = new_figure(9, 2.8)
    for ax, values, colour, title in zip(fig.subplots(1, 2), (messages, bits), (_POPULAR, _LONELY),
                                         ("messages per round", "bits per round (one run)")):
        ax.bar(np.arange(1, len(values) + 1), values, color=colour)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("round")
        ax.xaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    return fig


def _table(rows: list[tuple[str, Any]]) -> str:
    return "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(number_text(v))}</td></tr>"
                               for k, v in rows) + "</table>"


def _section(sid: str, title: str, body: str) -> str:
    return f"<section id='{sid}'><h2>{html.escape(title)}</h2>{body}</section>"


def _comment(source: str) -> str:
    if not source or not Path(source).is_file():
        return ""
    head = takewhile(lambda line: line.startswith("#"), Path(source).read_text().splitlines())
    lines = [line[1:].removeprefix(" ") for line in head]
    return f"<pre>{html.escape(chr(10).join(lines).strip())}</pre>" if lines else ""


def build_report(spec: RunSpec, *, trials: int | None = None) -> str:
    """The report's HTML for a scenario (see the module's docstring for its sections).

    ``trials`` overrides the scenario's (for the run and, for an audit scenario, per input
    of the audit).

    >>> from privsim.scenario import RunSpec
    >>> page = build_report(RunSpec(protocol="randomized-response", n=6, trials=50, seed=1))
    >>> [s for s in REPORT_SECTIONS if f"<section id='{s}'>" in page]
    ['scenario', 'schedule', 'cost', 'estimates', 'view']
    """
    spec = spec.with_overrides(trials=trials)  # None: the scenario's
    if spec.n is None or spec.n < 1:
        raise ParameterError("n is required (n = ... in the scenario)")
    proto = spec.build()
    extra = spec.extra
    res = simulate(proto, make_inputs(proto, spec.inputs, spec.n, spec.seed), trials=spec.trials, seed=spec.seed,
                   t=spec.t)
    coalition = extra.get("coalition")
    if coalition is None:  # the curator, else party 0
        coalition = "C" if res.schedule.curator else "0"
    small = simulate(proto, res.inputs[0], trials=min(VIEW_TRIALS, spec.trials), seed=spec.seed, t=res.t,
                     record=True)
    members = small.view(coalition).coalition
    name = Path(spec.source).name if spec.source else proto.name
    sections = []

    params = ", ".join(f"{k} = {v}" for k, v in proto.parameters.items()) or "none"
    truth = float(np.mean(res.true_value)) if np.ndim(res.true_value) == 1 else "-"
    rows: list[tuple[str, Any]] = [
        ("protocol", proto.name), ("parameters", params), ("n, t", f"{res.n}, {res.t}"), ("trials", res.trials),
        ("seed", res.seed), ("inputs", spec.inputs if spec.inputs is not None else "default"),
        ("true value (mean over trials)", truth)]
    sections.append(_section("scenario", f"Scenario: {name}", _table(rows) + _comment(spec.source)))

    sched = res.schedule
    lonely = sched.lonely(res.t)
    facts = _table([("parties", res.n), ("curator", sched.curator), ("rounds", sched.rounds),
                    ("messages", sched.messages), ("lonely", len(lonely)),
                    ("popular", sched.graph().number_of_nodes() - len(lonely)),
                    ("coalition", "{" + ",".join(map(str, members)) + "}")])
    graph = _svg(schedule_figure(sched, res.t, members, seed=res.seed or 0))
    sections.append(_section("schedule", "Schedule", f"<div class='fig'>{graph}{facts}</div>"))

    bits = [sum(message_bits(v, small.trials) for inbox in rnd.values() for v in inbox.values())
            for rnd in (small.transcript or [])]  # per round, of the recorded run's values
    note = (f"<p>Bits per round are those of the recorded run's values (they add up to {sum(bits)}; the run "
            f"counted {res.bits} bits, including any sizes a protocol declares itself).</p>")
    totals = _table([("messages per run", res.messages), ("bits per run", res.bits), ("rounds", res.rounds)])
    cost = _svg(_cost_figure(sched.messages_per_round(), bits))
    sections.append(_section("cost", "Messages and bits", f"<div class='fig'>{cost}{totals}</div>{note}"))

    est = np.asarray(res.estimate, dtype=float)
    if est.ndim == 1 and est.size > 1:
        err = est - np.asarray(res.true_value, dtype=float)
        stats = _table([("true value (mean)", float(np.mean(res.true_value))), ("estimate mean", float(est.mean())),
                        ("estimate std", float(est.std())), ("rmse", float(np.sqrt(np.mean(err ** 2))))])
        hist = _svg(estimate_figure(est, res.true_value, f"{res.trials} estimates"))
        body = f"<div class='fig'>{hist}{stats}</div>"
    else:
        body = f"<p>This protocol's estimate has shape {est.shape}: no single distribution to draw.</p>"
    sections.append(_section("estimates", "Estimates against the truth", body))

    sections.append(_section("view", "What the coalition sees",
                             f"<p>Over {small.trials} recorded runs.</p>" + view_html(small.view(coalition))))

    if extra.get("coalition") is not None and extra.get("neighbor") is not None:
        sections.append(_section("audit", "Audit", _audit_section(proto, spec, res, extra)))
    title = html.escape(f"privsim report: {name}")
    nav = "".join(f"<a href='#{s}'>{s}</a>" for s in REPORT_SECTIONS if f"<section id='{s}'>" in "".join(sections))
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{title}</h1><nav>{nav}</nav>{''.join(sections)}"
            f"<script>{_SCRIPT}</script></body></html>\n")


def _audit_section(proto: Any, spec: RunSpec, res: Any, extra: dict[str, Any]) -> str:
    from privsim.analysis.audit import audit
    from privsim.analysis.audit_selectors import parse_selectors
    from privsim.display import AUDIT_FIGURE_TRIALS, audit_figure, audit_rows, verdict

    selectors = parse_selectors(extra.get("selectors"), "selectors")
    r = audit(proto, res.inputs[0], coalition=extra["coalition"], neighbor=int(extra["neighbor"]),
              trials=spec.trials, seed=spec.seed, t=res.t, delta=extra.get("delta"),
              confidence=float(extra.get("confidence", 0.95)), selectors=selectors)
    klass = "verdict-violated" if r.violated else ""
    searched = (f"<p>What was searched: {'the selectors ' + ', '.join(selectors) if selectors else 'every selector'} "
                f"competed for the event over the view's {r.features} columns, on {r.trials_select} trials per input "
                f"(half to propose, half held out to pick up to three events); the events were then bounded on "
                f"{r.trials_estimate} further trials per input (Clopper–Pearson, {r.confidence:.0%} for all at "
                f"once), the best reported. Another event could separate the "
                f"two inputs better: a bound that is not violated says only that this search found no violation."
                f"</p>")
    figure = _svg(audit_figure(r, *r.sampler(min(AUDIT_FIGURE_TRIALS, r.trials))))
    lower = r.epsilon_lower if math.isfinite(r.epsilon_lower) else float("inf")
    return (f"<p class='{klass}'>Verdict: {html.escape(verdict(r))}: epsilon &gt;= {lower:.4g} "
            f"({r.confidence:.0%}).</p><div class='fig'>{figure}{_table(audit_rows(r))}</div>{searched}")


def write_report(path: str | Path, spec: RunSpec, *, trials: int | None = None) -> Path:
    """Write :func:`build_report`'s page to ``path`` (an ``.html`` file); returns the path.

    Example: ``write_report("rr.html", load_scenario("scenarios/randomized_response.toml"))``, as
    ``privsim report scenarios/randomized_response.toml -o rr.html`` does (tests/test_report.py).
    """
    p = check_report_path(path)
    p.write_text(build_report(spec, trials=trials))
    return p
