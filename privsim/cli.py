"""The ``privsim`` command: run protocols, print views (and, as they land, audit and bound them).

Every subcommand takes a scenario file or the same fields as flags (flags win), prints a
table (or one JSON object with ``--json``) on stdout and progress on stderr. Bad input
prints one line and exits with code 2.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click
import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from privsim import resources
from privsim.analysis.plots import floor_text, plot_audit, plot_estimates, plot_series
from privsim.cli_support import (
    WIDTH,
    check_executor_flags,
    check_plot_path,
    check_resources,
    interruptible,
    json_channel,
    print_json,
    progress_bar,
    protocol_detail,
    protocols_table,
    report_interruption,
    value_text,
)
from privsim.errors import ParameterError, PrivsimError
from privsim.interrupts import interrupted
from privsim.network.schedule import parse_coalition
from privsim.plan import DEFAULT_AUDIT_TRIALS, audit_split, plan_audit, plan_run, resolve_transport
from privsim.protocols import REGISTRY
from privsim.protocols.loading import plugin_class, plugins
from privsim.scenario import RunSpec, load_scenario, make_inputs, parse_params, read_scenario_text
from privsim.simulate import run_plan, simulate
from privsim.transport import TcpTransport
from privsim.transport.party import main as party_main

__all__ = ["app", "main"]

app = typer.Typer(
    name="privsim",
    help="Simulate distributed differentially private protocols: run, count, view, audit.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
stdout = Console()
stderr = Console(stderr=True)


def _version(value: bool) -> None:
    if value:
        from privsim import __version__

        print(f"privsim {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.",
                                        callback=_version, is_eager=True)) -> None:
    """Simulate distributed differentially private protocols: run, count, view, audit."""


# typer vendors click; its usage errors share this base class.
_UsageError = typer.BadParameter.__mro__[2]

# Options shared by the subcommands (typer needs them spelled per command). Every option
# shows its default ([default: ...]); options without a fixed default say what they take.
_SCENARIO = typer.Argument(None, help="A scenario TOML file (scenarios/*.toml); flags override its fields.",
                           show_default=False)
_PROTOCOL = typer.Option(None, "--protocol", help=f"Protocol: a name ({', '.join(REGISTRY.names())}, or an "
                         "installed plugin's; `privsim protocols` lists them), or your own as FILE.py:Class or "
                         "package.module:Class.", show_default="the scenario's")
_N = typer.Option(None, "--n", help="Number of parties.", show_default="the scenario's; required")
_T = typer.Option(None, "--t", help="Coalition-size threshold t.", show_default="the protocol's")
_TRIALS = typer.Option(None, "--trials", help="Number of independent runs R.",
                       show_default=f"the scenario's, else {RunSpec.trials}")
_SEED = typer.Option(None, "--seed", help="Root seed (same seed, same transcript).",
                     show_default="the scenario's, else 0")
_PARAM = typer.Option(None, "--param", help="Protocol parameter KEY=VALUE (repeatable); `privsim protocols "
                      "NAME` lists a protocol's parameters and their allowed values.", show_default="none")
_INPUTS = typer.Option(None, "--inputs", help="Inputs: zeros, ones, half, alternating, count:K, bernoulli:P "
                       "or a list such as [0,1,1].", show_default="the protocol's")
_JSON = typer.Option(False, "--json", help="Print one JSON object on stdout.", show_default="off")
_EXECUTOR = typer.Option(None, "--executor", help="Where batches run: local, processes or dask.",
                         show_default="local")
_SCHEDULER = typer.Option(None, "--scheduler", help="Dask scheduler address tcp://HOST:PORT.",
                          show_default="a LocalCluster on this machine")
_WORKERS = typer.Option(None, "--workers", help="Worker processes for processes/dask.",
                        show_default="one per core")
_MAX_MEMORY = typer.Option(None, "--max-memory", help="Memory the run may use, e.g. 512M or 6G; a run estimated "
                           "to need more is refused before it starts.", show_default="the memory available")
#: ``--max-time`` by default. A run estimated to take longer is refused before it starts, not
#: announced and left running: the time estimates came within 0.3-1.6x of the measured times
#: (docs/tutorials/scale.md), so a run refused at a day would not have finished overnight, and
#: one that is meant to run for a week says so (``--max-time 7d``).
MAX_TIME = "24h"
_MAX_TIME = typer.Option(MAX_TIME, "--max-time", help="Time the run may take, e.g. 30m, 24h or 7d; a run estimated "
                         "to take longer is refused before it starts.")
_PROGRESS = typer.Option(None, "--progress/--no-progress", help="Progress bars on stderr.",
                         show_default="on a terminal")


def _plot_option(what: str) -> Any:
    return typer.Option(None, "--plot", help=f"Write {what} (.png, .pdf or .svg; checked before the run).",
                        show_default="no figure")


_SCENARIO_FILE: list[str] = []  # the scenario file of the running command, named in error lines


def _spec(scenario: Path | None, protocol: str | None, n: int | None, t: int | None,
          trials: int | None, seed: int | None, params: list[str] | None,
          inputs: str | None) -> RunSpec:
    if scenario is not None and protocol is None and _scenario_protocol(scenario) == "headline":
        # Only `run` runs the headline comparison (many protocols); views, audit, bounds take one.
        raise ParameterError(f"{scenario}: the headline scenario compares many protocols: run it with "
                             f"`privsim run {scenario}`, or give --protocol NAME for one of them")
    base = load_scenario(scenario) if scenario is not None else RunSpec()
    if scenario is not None:
        _SCENARIO_FILE[:] = [str(scenario)]
    return base.with_overrides(protocol=protocol, n=n, t=t, trials=trials, seed=seed, inputs=inputs,
                               params=parse_params(params))


def _protocol(spec: RunSpec) -> Any:
    """The protocol, once n and trials are known to be in range (the resource check reads them)."""
    if spec.n is None:
        raise ParameterError("n is required (--n N or n = ... in the scenario)")
    if spec.n < 1:
        raise ParameterError(f"n must be >= 1 (got {spec.n})")
    if spec.trials < 1:
        raise ParameterError(f"trials must be >= 1 (got {spec.trials})")
    return spec.build()


def _setting(spec: RunSpec) -> tuple[Any, int]:
    """The protocol and t, checked (t within range, the protocol's own conditions) before
    anything is built from them (a schedule for t >= n names parties that do not exist)."""
    proto = _protocol(spec)
    t = proto.default_t(spec.n) if spec.t is None else spec.t  # type: ignore[arg-type]
    proto.check_setting(spec.n, t)  # type: ignore[arg-type]
    return proto, t


def _warn(line: str) -> None:
    print(line, file=sys.stderr)


def _table(title: str, rows: Iterable[tuple[str, Any]]) -> Table:
    table = Table(title=title, show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    for k, v in rows:
        table.add_row(k, value_text(v))
    return table


def run_spec(spec: RunSpec, progress: bool | None = None, executor: str | None = None, scheduler: str | None = None,
             workers: int | None = None, max_memory: str | None = None, backend: str = "trio",
             transport: Any = "local", max_time: str | None = None) -> Any:
    """Run a scenario in batches; returns the :class:`~privsim.simulate.RunSummary`.

    Checks the setting, the executor flags and the resources (:func:`privsim.cli_support.check_resources`)
    before anything runs; the progress bar counts trials.
    """
    proto = _protocol(spec)
    executor = executor or spec.extra.get("executor")
    check_executor_flags(executor, scheduler, workers)
    plan = check_resources(
        spec.n, spec.trials,  # type: ignore[arg-type]
        lambda: plan_run(proto, make_inputs(proto, spec.inputs, spec.n, spec.seed), trials=spec.trials,  # type: ignore[arg-type]
                         seed=spec.seed, t=spec.t, record=False, split=True, backend=backend, transport=transport),
        executor=executor, workers=workers, max_memory=max_memory, max_time=max_time, warn=_warn,
        cohorts=resources.has_cohort_form(proto))
    with progress_bar(plan.trials, f"{proto.name}", unit="trials", batches=len(plan.batches),
                      enabled=progress) as advance:
        return run_plan(plan, executor=executor, scheduler=scheduler, workers=workers,
                        progress=lambda k: advance(plan.batches[k - 1][1], k))


def _theory_sd(protocol: Any, n: int, t: int) -> float | None:
    # The estimate's standard deviation where the protocol states its variance (RR: variance(n); secure sums:
    # noise_variance(n, t); continual sums: a number).
    for name, args in (("variance", (n,)), ("noise_variance", (n, t))):
        value = getattr(protocol, name, None)
        try:
            value = value(*args) if callable(value) else value
        except TypeError:
            continue
        if isinstance(value, (int, float)) and value >= 0:
            return float(value) ** 0.5
    return None


@app.command()
def run(
    scenario: Path | None = _SCENARIO,
    protocol: str | None = _PROTOCOL,
    n: int | None = _N,
    t: int | None = _T,
    trials: int | None = _TRIALS,
    seed: int | None = _SEED,
    param: list[str] | None = _PARAM,
    inputs: str | None = _INPUTS,
    json_out: bool = _JSON,
    plot: Path | None = _plot_option("the estimates' distribution"),
    executor: str | None = _EXECUTOR,
    scheduler: str | None = _SCHEDULER,
    workers: int | None = _WORKERS,
    backend: str = typer.Option("trio", "--backend", help="In-process event loop: trio or asyncio "
                                "(identical results)."),
    transport: str = typer.Option("local", "--transport", help="local (parties are tasks of this process) or "
                                  "tcp (every party its own process, TCP on loopback; adds wire_bytes)."),
    timeout: float | None = typer.Option(None, "--timeout", help="With --transport tcp: seconds a party waits "
                                         "for a scheduled message before naming the silent party.",
                                         show_default="5"),
    max_memory: str | None = _MAX_MEMORY,
    max_time: str = _MAX_TIME,
    progress: bool | None = _PROGRESS,
) -> None:
    """Run a protocol R times and report its cost (messages, bits, rounds) and accuracy.

    A scenario with ``protocol = "headline"`` runs the headline comparison instead (error
    and messages versus n for randomized response, secure sum and ck-sum).
    """
    plot = check_plot_path(plot)
    if scenario is not None and protocol is None and _scenario_protocol(scenario) == "headline":
        unused = {"--n": n, "--t": t, "--param": param or None, "--inputs": inputs, "--executor": executor,
                  "--scheduler": scheduler, "--workers": workers}
        _run_headline(scenario, plot, json_out, trials=trials, seed=seed, progress=progress,
                      unused=[k for k, v in unused.items() if v is not None])
        return
    spec = _spec(scenario, protocol, n, t, trials, seed, param, inputs)
    res = run_spec(spec, progress=progress, executor=executor, scheduler=scheduler, workers=workers,
                   max_memory=max_memory, backend=backend, transport=_transport(transport, timeout),
                   max_time=max_time)
    summary = res.summary()
    if plot is not None:
        title = f"{summary['protocol']}, n={summary['n']}, R={summary['trials']}"
        theory = _theory_sd(res.protocol, res.n, res.t)
        if res.series_example is not None:  # a continual release: the series and its per-step error
            plot_series(str(plot), *res.series_example, res.series_error_std, theory, title)
        else:
            plot_estimates(str(plot), res.estimate, res.true_value, title, theory)
        summary["plot"] = str(plot)
    if json_out:
        print_json(summary)
    else:
        stdout.print(_table(f"privsim run: {summary['protocol']}",
                            [(k, v) for k, v in summary.items() if k != "params"] +
                            [(f"param {k}", v) for k, v in summary["params"].items()]))


def _transport(name: str, timeout: float | None) -> Any:
    """``--transport`` and ``--timeout`` as what :func:`~privsim.simulate.simulate` takes."""
    if name == "local" and timeout is not None:
        raise ParameterError("--timeout applies only with --transport tcp")
    transport = resolve_transport(name)
    return transport if timeout is None else TcpTransport(timeout=timeout)


@app.command()
def party(
    party_id: str = typer.Option(..., "--id", help="This party's id: 0..n-1, or C for the curator."),
    peers: Path = typer.Option(..., "--peers", help="The run's peers file (JSON; it holds the run's key)."),
    result: Path | None = typer.Option(None, "--result", help="Write this party's report (binary, no pickle).",
                                       show_default="none"),
) -> None:
    """Run one party of a run over TCP, on any host: it connects to the peers the peers file names.

    Prints one JSON line (messages, bits, rounds and bytes on the wire of this party, or the
    error that stopped the run, naming the party and the round); exit code 2 on failure.
    """
    code = party_main(["--id", party_id, "--peers", str(peers), *(["--result", str(result)] if result else [])])
    if code:
        sys.exit(code)  # the party printed its one line already


def _scenario_protocol(path: Path) -> str | None:
    try:
        return tomllib.loads(read_scenario_text(Path(path))).get("protocol")
    except (PrivsimError, tomllib.TOMLDecodeError, RecursionError):
        return None  # load_scenario reports the problem


def _run_headline(path: Path, plot: Path | None, json_out: bool, trials: int | None, seed: int | None,
                  progress: bool | None, unused: list[str]) -> None:
    from privsim.analysis.headline import (
        DEFAULT_PROTOCOLS,
        PROTOCOLS,
        headline_study,
        load_headline_scenario,
        plot_headline,
    )

    _SCENARIO_FILE[:] = [str(path)]
    kwargs = load_headline_scenario(path)
    if unused:
        raise ParameterError(f"{unused[0].lstrip('-')}: the headline scenario takes its n values, t and epsilon "
                             f"from the file; {unused[0]} does not apply (allowed: --trials, --seed, --plot, --json)")
    kwargs.update({k: v for k, v in (("trials", trials), ("seed", seed)) if v is not None})
    least = 50  # headline_study's min_trials: it would silently raise fewer trials to this
    if kwargs["trials"] < least:
        raise ParameterError(f"trials must be >= {least} for the headline comparison (got {kwargs['trials']})")
    if not 0 <= kwargs["t"] < min(kwargs["ns"]):
        raise ParameterError(f"t must satisfy 0 <= t < every n (t = {kwargs['t']}, smallest n = "
                             f"{min(kwargs['ns'])}); it would be clamped silently")
    runs = len(DEFAULT_PROTOCOLS) * len(kwargs["ns"])  # one simulation per protocol and n
    def affordable(est: Any) -> None:  # before the first run: refuse what cannot fit, announce what is long
        resources.check_memory(est, resources.available_memory())
        if est.seconds > 60:
            _warn(f"privsim: the headline comparison will take about {resources.format_seconds(est.seconds)} "
                  f"(estimated; {resources.format_bytes(est.memory)} peak, {est.batches} runs); Ctrl-C stops it")

    with progress_bar(runs, "headline", unit="runs", enabled=progress) as advance:
        data = headline_study(**kwargs, progress=lambda _: advance(1), on_estimate=affordable)
    if plot is not None:
        plot_headline(str(plot), data)
        data["plot"] = str(plot)
    if json_out:
        print_json(data)
        return
    # one row per n and protocol: every protocol of the figure, however many the study ran
    table = Table("n", "trials", "protocol", "rmse", "exact sd", "messages", "per party",
                  title="privsim run: headline comparison (rmse, exact sd and messages per run)")
    keys = data.get("protocols") or [k for k in PROTOCOLS if k in data]
    for i, nn in enumerate(data["ns"]):
        for k in keys:
            d = data[k]
            table.add_row(str(nn), str(data["trials"][i]), PROTOCOLS[k].label if k in PROTOCOLS else k,
                          f"{d['rmse'][i]:.3f}", f"{d['rmse_theory'][i]:.3f}", str(d["messages"][i]),
                          f"{d['messages'][i] / nn:.2f}")
    stdout.print(table)


#: The most rows ``privsim views`` prints (messages and draws over the trials shown).
VIEW_ROWS = 5000


@app.command()
def views(
    scenario: Path | None = _SCENARIO,
    protocol: str | None = _PROTOCOL,
    n: int | None = _N,
    t: int | None = _T,
    trials: int | None = typer.Option(3, "--trials", help="Number of trials to show."),
    seed: int | None = _SEED,
    param: list[str] | None = _PARAM,
    inputs: str | None = _INPUTS,
    coalition: str = typer.Option(..., "--coalition", help="Coalition ids, e.g. 0,1 or C or C,0."),
    json_out: bool = _JSON,
) -> None:
    """Print a coalition's view (inputs, randomness, messages, outputs) for the first trials."""
    spec = _spec(scenario, protocol, n, t, None, seed, param, inputs).with_overrides(trials=trials)
    proto, tt = _setting(spec)
    members = parse_coalition(coalition, spec.n, proto.has_curator)  # type: ignore[arg-type]
    if not members:
        raise ParameterError(f"coalition: give at least one party id, e.g. 0,1 or C (got {coalition!r})")
    sched = proto.cached_schedule(spec.n, tt)  # type: ignore[arg-type]
    rows = spec.trials * sum(1 for _, s, d in sched.triples() if s in members or d in members)
    if rows > VIEW_ROWS:
        raise ParameterError(f"trials, coalition: the view has {rows} messages over {spec.trials} trial(s); views "
                             f"prints at most {VIEW_ROWS} (use fewer trials, a smaller n, T or coalition, or "
                             "simulate(...).view() in Python)")
    x = make_inputs(proto, spec.inputs, spec.n, spec.seed)  # type: ignore[arg-type]
    with progress_bar(1, "views", batches=1, enabled=False) as advance:
        res = simulate(proto, x, trials=spec.trials, seed=spec.seed, t=tt, coalition=members)
        advance(1, 1)
    view = res.view(members)
    if json_out:
        print_json(view.to_dict(trials=spec.trials))
        return
    stages = proto.round_stages(spec.n, tt)  # type: ignore[arg-type]  # e.g. secagg's, beside the round
    for i in range(spec.trials):
        table = Table("round", "from", "to", "value",
                      title=f"view of coalition {{{', '.join(map(str, view.coalition))}}}, trial {i}")
        for m in view.coalition:
            if m in view.inputs:
                table.add_row("-", "input", str(m), _short(view.trial_value(view.inputs[m], i)))
            for k, d in enumerate(view.randomness.get(m, [])):
                table.add_row("-", f"rand #{k}", str(m), _short(view.trial_value(d, i)))
        for r, s, d, v in view.rows(i):
            table.add_row(f"{r} {stages[r - 1]}" if stages else str(r), str(s), str(d), _short(v))
        for m, v in view.outputs.items():
            table.add_row("-", "output", str(m), _short(view.trial_value(v, i)))
        stdout.print(table)


def _short(v: Any) -> str:
    try:
        arr = np.asarray(v)
    except ValueError:  # a tuple value with parts of different shapes: part by part
        arr = np.empty(0, dtype=object)
    if arr.dtype == object:
        return "(" + ", ".join(_short(e) for e in v) + ")"
    if arr.dtype.kind == "f":
        return np.array2string(arr, precision=4, threshold=8) if arr.ndim else f"{float(arr):.6g}"
    return str(arr.tolist()) if arr.size <= 8 else np.array2string(arr, threshold=8)


#: ``privsim audit --trials`` when neither the flag nor the scenario gives it.
AUDIT_TRIALS = DEFAULT_AUDIT_TRIALS
_AUDIT_TRIALS = typer.Option(None, "--trials", help="Runs per input (selection and estimation together).",
                             show_default=f"the scenario's, else {AUDIT_TRIALS}")


@app.command("audit")
def audit_cmd(
    scenario: Path | None = _SCENARIO,
    protocol: str | None = _PROTOCOL,
    n: int | None = _N,
    t: int | None = _T,
    trials: int | None = _AUDIT_TRIALS,
    seed: int | None = _SEED,
    param: list[str] | None = _PARAM,
    inputs: str | None = _INPUTS,
    coalition: str | None = typer.Option(None, "--coalition", help="Coalition ids, e.g. 0,1 or C or C,0, "
                                         "or public (what the protocol publishes).",
                                         show_default="the scenario's; required"),
    neighbor: int | None = typer.Option(None, "--neighbor", help="The party outside the coalition whose "
                                           "input differs between x and x'.", show_default="the scenario's; required"),
    delta: float | None = typer.Option(None, "--delta", help="delta of the (eps, delta) statement.",
                                       show_default="the scenario's, else the delta of the claim it is judged against"),
    confidence: float | None = typer.Option(None, "--confidence", help="Confidence of the bound.",
                                            show_default="the scenario's, else 0.95"),
    selectors: str | None = typer.Option(None, "--selectors", help="Selectors that compete for the event, "
                                         "comma-separated, view among them (view, naive-bayes, logistic-lr, "
                                         "pairs, trees); view alone is the former rule.",
                                         show_default="the scenario's, else all"),
    json_out: bool = _JSON,
    plot: Path | None = _plot_option("the score under x and x' with the event, and p-hat, q-hat"),
    executor: str | None = _EXECUTOR,
    scheduler: str | None = _SCHEDULER,
    workers: int | None = _WORKERS,
    max_memory: str | None = _MAX_MEMORY,
    max_time: str = _MAX_TIME,
    progress: bool | None = _PROGRESS,
) -> None:
    """Audit a coalition's view: a sound lower bound on epsilon, against the protocol's claim."""
    from privsim.analysis.audit_selectors import parse_selectors

    plot = check_plot_path(plot)
    spec = _spec(scenario, protocol, n, t, trials, seed, param, inputs)
    if trials is None and spec.trials == RunSpec().trials:  # named by neither the flag nor the scenario
        spec = spec.with_overrides(trials=AUDIT_TRIALS)
    flags = {"coalition": coalition, "neighbor": neighbor, "delta": delta, "confidence": confidence}
    extra = {**spec.extra, **{k: v for k, v in flags.items() if v is not None}}  # flags win
    if extra.get("coalition") is None:
        raise ParameterError("coalition is required (--coalition IDS, e.g. 0,1 or C)")
    if extra.get("neighbor") is None:
        raise ParameterError("neighbor is required (--neighbor J, a party outside the coalition)")
    executor = executor or extra.get("executor")
    chosen = parse_selectors(selectors if selectors is not None else extra.get("selectors"),
                             "--selectors" if selectors is not None else "selectors")
    proto = _protocol(spec)
    check_executor_flags(executor, scheduler, workers)
    result = _audit_with_progress(proto, spec, extra["coalition"], extra["neighbor"], progress=progress,
                                  delta=extra.get("delta"), confidence=float(extra.get("confidence", 0.95)),
                                  executor=executor, scheduler=scheduler, workers=workers,
                                  max_memory=max_memory, max_time=max_time, selectors=chosen)
    data = result.to_dict()
    if plot is not None:
        _audit_plot(str(plot), result)
        data["plot"] = str(plot)
    if json_out:
        print_json(data)
    else:
        stdout.print(_table(f"privsim audit: {proto.name}, coalition {{{','.join(result.coalition)}}} "
                            f"vs party {result.neighbor}", _audit_rows(data)))


def _audit_rows(data: dict[str, Any]) -> list[tuple[str, Any]]:
    # Lower bounds are rounded down, never up (6 decimals); everything else as value_text prints it.
    return [(k, floor_text(v, 6) if k == "epsilon_lower" and isinstance(v, float) else v)
            for k, v in data.items() if k != "params"]


def _audit_with_progress(proto: Any, spec: RunSpec, coalition: Any, neighbor: Any, *, progress: bool | None,
                         max_memory: str | None = None, executor: str | None = None, scheduler: str | None = None,
                         workers: int | None = None, delta: float | None = None, confidence: float = 0.95,
                         selectors: Any = None, max_time: str | None = None) -> Any:
    """The audit's plan (:func:`privsim.plan.plan_audit`, after the resource check), run with a
    progress bar over its batches (selection, then estimation, both inputs); returns the
    :class:`~privsim.analysis.audit.AuditResult`."""
    from privsim.analysis.audit import run_audit

    def build() -> Any:
        x = make_inputs(proto, spec.inputs, spec.n, spec.seed)  # type: ignore[arg-type]
        return plan_audit(proto, x, coalition=coalition, neighbor=neighbor, trials=spec.trials, seed=spec.seed,
                          t=spec.t, delta=delta, selectors=selectors)

    plan = check_resources(spec.n, spec.trials, build, executor=executor, workers=workers,  # type: ignore[arg-type]
                           max_memory=max_memory, max_time=max_time, warn=_warn,
                           audit=audit_split(spec.trials, spec.n),  # type: ignore[arg-type]
                           cohorts=resources.has_cohort_form(proto))
    with progress_bar(plan.split.total_batches, f"audit {proto.name}", unit="batches", enabled=progress) as advance:
        return run_audit(plan, confidence=confidence, progress=lambda k: advance(1, k), executor=executor,
                         scheduler=scheduler, workers=workers)


def _audit_plot(path: str, result: Any) -> None:
    vx, vxp = result.sampler(min(result.trials, 1 << 15))  # fresh views, from seeds derived from the audit's
    estimate = {"p_hat": result.p_hat, "q_hat": result.q_hat, "trials": result.trials_estimate,
                "confidence": result.confidence_each or result.confidence, "epsilon_lower": result.epsilon_lower}
    plot_audit(path, vx, vxp, result.event_object,
               f"{result.protocol}: coalition {{{','.join(result.coalition)}}} vs party {result.neighbor}; "
               f"epsilon >= {floor_text(result.epsilon_lower)} ({result.confidence:.0%})", estimate)


@app.command()
def bounds(
    scenario: Path | None = _SCENARIO,
    protocol: str | None = _PROTOCOL,
    n: int | None = _N,
    t: int | None = _T,
    param: list[str] | None = _PARAM,
    audit_lonely: bool = typer.Option(False, "--audit", help="Audit the first lonely party against the "
                                      "coalition of its neighbours (the reduction to the local model).",
                                      show_default="off"),
    trials: int | None = typer.Option(None, "--trials", help="Trials per input for --audit.",
                                      show_default="200000"),
    seed: int | None = _SEED,
    inputs: str | None = _INPUTS,
    json_out: bool = _JSON,
    max_memory: str | None = _MAX_MEMORY,
    max_time: str = _MAX_TIME,
    progress: bool | None = _PROGRESS,
) -> None:
    """Messages vs n(t+1)/4 and n(t+1)/2, popular and lonely parties, and lonely parties' neighbour coalitions."""
    from privsim.analysis.bounds import analyze_schedule

    spec = _spec(scenario, protocol, n, t, trials, seed, param, inputs)
    proto, tt = _setting(spec)
    report = analyze_schedule(proto.cached_schedule(spec.n, tt), tt)  # type: ignore[arg-type]
    target = next(((p, c) for p, c in report.lonely_coalitions.items() if c), None)
    if audit_lonely and target is None:
        raise ParameterError(f"audit: nothing to audit: {proto.name} at n = {spec.n}, t = {tt} has no lonely party "
                             "with neighbours (--audit needs one, e.g. randomized-response-distributed)")
    data: dict[str, Any] = {"protocol": proto.name, "params": proto.parameters, **report.to_dict()}
    isolating = getattr(proto, "isolating_coalition", None)  # protocols with a server (secagg, secagg-plus)
    if callable(isolating) and (found := isolating(spec.n, tt)) is not None:
        data["isolating_coalition"], data["isolated_party"] = ",".join(map(str, found[0])), found[1]
    if audit_lonely:  # the first lonely party (with a non-empty neighbourhood) against its neighbours
        party, coalition = target
        data["audit"] = _audit_with_progress(proto, spec.with_overrides(trials=trials or 200_000, t=tt), coalition,
                                             party, progress=progress, max_memory=max_memory,
                                             max_time=max_time).to_dict()
    if json_out:
        print_json(data)
        return
    rows = [(k, v) for k, v in data.items() if k not in ("params", "lonely_coalitions", "audit")]
    rows += [(f"neighbours of lonely {p}", ",".join(c)) for p, c in data["lonely_coalitions"].items()]
    rows += [(f"audit {k}", v) for k, v in _audit_rows(data.get("audit") or {})]
    stdout.print(_table(f"privsim bounds: {proto.name}, n={spec.n}, t={tt}", rows))


@app.command()
def bench(
    only: list[str] | None = typer.Option(None, "--only", help="Run only these suites (e.g. engine).",
                                          show_default="every suite"),
    check_docs: bool = typer.Option(False, "--check-docs", help="Run the suites that produce the docs' figures "
                                    "(docs/figures.toml) and say which no longer hold (exit 1 if any).",
                                    show_default="off"),
    json_out: bool = _JSON,
) -> None:
    """Run the benchmark suite (bench/*.py) and print its named figures (ratios measured in-process)."""
    from privsim.figures import check, load_figures

    root = Path(__file__).resolve().parent.parent
    scripts = sorted((root / "bench").glob("bench_*.py"))
    if not scripts:
        raise ParameterError(f"no benchmark suite found in {root / 'bench'} (it ships with the source checkout)")
    names = [p.stem.removeprefix("bench_") for p in scripts]
    unknown = sorted(set(only or []) - set(names))
    if unknown:
        raise ParameterError(f"--only: unknown suite {unknown[0]!r} (allowed: {', '.join(names)})")
    figures = load_figures(root / "docs" / "figures.toml") if check_docs else []
    wanted = set(only or names) & ({f.suite for f in figures} if check_docs else set(names))
    results: dict[str, Any] = {}
    for path, name in zip(scripts, names):
        if name not in wanted:
            continue
        stderr.print(f"bench: {name} ...", markup=False)
        spec = importlib.util.spec_from_file_location(f"privsim_bench_{name}", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        results[name] = module.main()
    verdicts = check(figures, results)
    if json_out:
        if check_docs:
            results["figures"] = [{"page": f.page, "text": f.text, "suite": f.suite, "key": f.key, "measured": v,
                                   "band": list(f.band()), "holds": ok} for f, v, ok in verdicts]
        print_json(results)
    elif check_docs:
        stdout.print(_table("privsim bench --check-docs", [
            (f"{f.page}: {f.text.strip(' |')}", f"{v:.4g} {'holds' if ok else 'OUTSIDE'} [{f.band()[0]:.4g}, "
                                                f"{f.band()[1]:.4g}] ({f.suite}.{f.key})")
            for f, v, ok in verdicts]))
    else:
        stdout.print(_table("privsim bench", [(f"{s}.{k}", v) for s, figs in results.items()
                                              for k, v in figs.items()]))
    if not all(ok for _, _, ok in verdicts):
        sys.exit(1)


@app.command("protocols")
def list_protocols(
    name: str | None = typer.Argument(None, help="One protocol to show in detail.", show_default="all, in brief"),
    json_out: bool = _JSON,
) -> None:
    """List the protocols (built-in and installed plugins) and their parameters (`privsim protocols NAME`: one
    in detail)."""
    classes: dict[str, tuple[str, type]] = {key: ("built-in", cls) for key, cls in sorted(REGISTRY.items())}
    failed: list[str] = []
    for plugin in plugins():
        try:
            classes.setdefault(plugin.name, (f"plugin {plugin.distribution}", plugin_class(plugin)))
        except PrivsimError as exc:  # list the others, then report it (exit 2)
            failed.append(str(exc))
    if name is not None:
        if name not in classes:
            raise ParameterError(f"protocol: unknown protocol {name!r} (allowed: {', '.join(sorted(classes))})")
        classes = {name: classes[name]}
    info = {key: {k: {"default": p.default if isinstance(p.default, (int, float, str, bool)) else None,
                      "allowed": p.allowed(), "doc": p.doc} for k, p in cls.params.items()}
            for key, (_, cls) in classes.items()}
    if json_out:
        print_json(info if name is None else info[name])
    elif name is None:
        stdout.print(protocols_table({key: cls for key, (_, cls) in classes.items()}), width=WIDTH)
    else:
        stdout.print(protocol_detail(name, classes[name][1]), width=WIDTH)
    for message in failed:
        print(f"error: {message}", file=sys.stderr)
    if failed:
        sys.exit(2)


@app.command("report")
def report_cmd(
    scenario: Path = typer.Argument(..., help="A scenario TOML file (scenarios/*.toml)."),
    output: Path = typer.Option(..., "-o", "--output", help="The HTML file to write (one self-contained page)."),
    trials: int | None = typer.Option(None, "--trials", help="Runs (and, for an audit scenario, runs per input "
                                      "of the audit).", show_default="the scenario's"),
    seed: int | None = _SEED,
) -> None:
    """Write one self-contained HTML page about a scenario: its schedule as a graph (lonely and popular parties,
    the coalition), messages and bits per round, the estimates against the truth, the coalition's view and, for an
    audit scenario, the event, both inputs' distributions, the verdict and what was searched."""
    from privsim.report import check_report_path, write_report

    path = check_report_path(output)
    spec = _spec(scenario, None, None, None, None, seed, None, None)
    print(f"wrote {write_report(path, spec, trials=trials)}")


@app.command("new-protocol")
def new_protocol(
    name: str = typer.Argument(..., help="The protocol's name, e.g. relay-sum (writes relay_sum.py and "
                               "relay_sum.toml)."),
    folder: Path = typer.Option(Path("."), "--dir", help="Folder to write the two files into."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing files.", show_default="off"),
) -> None:
    """Write a commented, runnable protocol file and a scenario that runs it."""
    from privsim.protocols.template import write_template

    py, toml = write_template(name, folder, force=force)
    print(f"wrote {py} and {toml}; try: privsim run {toml}")


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the CLI; user errors print one line and exit with code 2.

    SIGINT and SIGTERM stop any command within about a second: workers are ended,
    temporary files removed, one line ``interrupted after N of M batches`` is printed and
    the exit code is 130 (SIGINT) or 143 (SIGTERM); nothing is printed on stdout.

    Example: ``main(["run", "--protocol", "randomized-response", "--n", "100", "--json"])``
    prints one JSON object, as ``privsim run ... --json`` does.
    """
    _SCENARIO_FILE.clear()
    with interruptible():
        try:
            code = _dispatch(argv)
        except BaseException:  # noqa: B036 - an interruption may surface as any exception
            signum = interrupted(clear=True)
            if signum is None:
                raise
            report_interruption()
            code = 128 + signum
    if code is not None:  # a command that succeeds returns (callers of main() in Python go on)
        sys.exit(code)


#: Errors of writing the output (a full disk, a device error, a file over its size limit).
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT})


def _dispatch(argv: list[str] | None) -> int | None:
    try:
        args = sys.argv[1:] if argv is None else [str(a) for a in argv]
        with json_channel("--json" in args):  # a party's print() does not corrupt the JSON
            app(args=argv, standalone_mode=False)
        sys.stdout.flush()  # a buffered output's write error surfaces here, not at exit
    except PrivsimError as exc:
        message = str(exc)
        if _SCENARIO_FILE and not message.startswith(_SCENARIO_FILE[0]):
            message = f"{_SCENARIO_FILE[0]}: {message}"
        print(f"error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `privsim ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            raise
        # `privsim ... > /dev/full`: the output could not be written. One line on stderr, and
        # stdout pointed at /dev/null so that the interpreter's last flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"error: output: writing failed ({exc.strerror}); free some space or write elsewhere",
              file=sys.stderr)
        return 2
    except MemoryError:
        print("error: n, trials: out of memory during the run (lower n or trials, or set --max-memory lower "
              "to be refused up front)", file=sys.stderr)
        return 2
    except (typer.Exit, click.exceptions.Exit) as exc:
        return exc.exit_code
    except (typer.Abort, click.exceptions.Abort):
        print("aborted", file=sys.stderr)
        return 1
    except (_UsageError, click.ClickException) as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `privsim`: show the help
            print(exc.format_message())
            return 0
        print(f"error: {exc.format_message()}", file=sys.stderr)
        return 2
    return None


if __name__ == "__main__":
    main()
