"""The ``privsim`` command: run protocols, print views (and, as they land, audit and bound them).

Every subcommand takes a scenario file or the same fields as flags (flags win), prints a
table (or one JSON object with ``--json``) on stdout and progress on stderr. Bad input
prints one line and exits with code 2.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
import numpy as np
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from privsim.analysis.plots import plot_audit, plot_estimates, plot_series
from privsim.errors import ParameterError, PrivsimError
from privsim.protocols import REGISTRY
from privsim.scenario import RunSpec, load_scenario, make_inputs, parse_params
from privsim.simulate import batch_plan, run_trials, simulate

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
T = TypeVar("T")
# typer vendors click; its usage errors share this base class.
_UsageError = typer.BadParameter.__mro__[2]

# Options shared by the subcommands (typer needs them spelled per command).
_SCENARIO = typer.Argument(None, help="A scenario TOML file (scenarios/*.toml); flags override its fields.",
                           show_default=False)
_PROTOCOL = typer.Option(None, "--protocol", help=f"Protocol name: {', '.join(REGISTRY.names())}.")
_N = typer.Option(None, "--n", help="Number of parties.")
_T = typer.Option(None, "--t", help="Coalition-size threshold t (default: the protocol's).")
_TRIALS = typer.Option(None, "--trials", help="Number of independent runs R.")
_SEED = typer.Option(None, "--seed", help="Root seed (same seed, same transcript).")
_PARAM = typer.Option(None, "--param", help="Protocol parameter KEY=VALUE (repeatable).")
_INPUTS = typer.Option(None, "--inputs",
                       help="Inputs: zeros, ones, half, alternating, count:K, bernoulli:P.")
_JSON = typer.Option(False, "--json", help="Print one JSON object on stdout.")
_EXECUTOR = typer.Option(None, "--executor", help="Where batches run: local, processes or dask [local].")
_SCHEDULER = typer.Option(None, "--scheduler", help="Dask scheduler address tcp://HOST:PORT "
                          "(default: a LocalCluster on this machine).")
_WORKERS = typer.Option(None, "--workers", help="Worker processes for processes/dask [one per core].")


_SCENARIO_FILE: list[str] = []  # the scenario file of the running command, named in error lines


def _spec(scenario: Path | None, protocol: str | None, n: int | None, t: int | None,
          trials: int | None, seed: int | None, params: list[str] | None,
          inputs: str | None) -> RunSpec:
    base = load_scenario(scenario) if scenario is not None else RunSpec()
    if scenario is not None:
        _SCENARIO_FILE[:] = [str(scenario)]
    return base.with_overrides(protocol=protocol, n=n, t=t, trials=trials, seed=seed, inputs=inputs,
                               params=parse_params(params))


def _check_counts(spec: RunSpec) -> None:
    if spec.n is None:
        raise ParameterError("n is required (--n N or n = ... in the scenario)")
    if spec.n < 1:
        raise ParameterError(f"n must be >= 1 (got {spec.n})")
    if spec.trials < 1:
        raise ParameterError(f"trials must be >= 1 (got {spec.trials})")


@contextmanager
def progress_bar(total: int, label: str, enabled: bool = True) -> Iterator[Any]:
    """A rich progress bar on stderr that appears only once the work has taken over a second."""
    state: dict[str, Any] = {"start": time.perf_counter(), "bar": None, "task": None, "done": 0}

    def advance(k: int = 1) -> None:
        state["done"] += k
        if state["bar"] is None and enabled and time.perf_counter() - state["start"] > 1.0:
            bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                           console=stderr, transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task(label, total=total)
        if state["bar"] is not None:
            state["bar"].update(state["task"], completed=state["done"])

    try:
        yield advance
    finally:
        if state["bar"] is not None:
            state["bar"].stop()


def _table(title: str, rows: Iterable[tuple[str, Any]]) -> Table:
    table = Table(title=title, show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    for k, v in rows:
        table.add_row(k, f"{v:.6g}" if isinstance(v, float) else str(v))
    return table


def run_spec(spec: RunSpec, progress: bool = True, executor: str | None = None, scheduler: str | None = None,
             workers: int | None = None) -> Any:
    """Run a scenario in batches; returns the :class:`~privsim.simulate.RunSummary`."""
    _check_counts(spec)
    protocol = spec.build()
    inputs = make_inputs(protocol, spec.inputs, spec.n, spec.seed)  # type: ignore[arg-type]
    plan = batch_plan(spec.trials, spec.n)  # type: ignore[arg-type]
    rounds = protocol.cached_schedule(spec.n, protocol.default_t(spec.n) if spec.t is None else spec.t).rounds
    remote = (executor or spec.extra.get("executor") or "local") != "local"  # workers cannot report rounds
    with progress_bar(len(plan) * max(rounds, 1), f"{protocol.name}: {len(plan)} batches x {rounds} rounds",
                      enabled=progress) as advance:
        res = run_trials(protocol, inputs, trials=spec.trials, seed=spec.seed, t=spec.t,
                         executor=executor or spec.extra.get("executor"), scheduler=scheduler, workers=workers,
                         progress=lambda k: advance(max(rounds, 1) if remote else 0),
                         on_round=lambda r: advance(1))
    return res


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
    plot: Path | None = typer.Option(None, "--plot", help="Write a PNG of the estimates' distribution."),
    executor: str | None = _EXECUTOR,
    scheduler: str | None = _SCHEDULER,
    workers: int | None = _WORKERS,
) -> None:
    """Run a protocol R times and report its cost (messages, bits, rounds) and accuracy.

    A scenario with ``protocol = "headline"`` runs the headline comparison instead (error
    and messages versus n for randomized response, secure sum and ck-sum).
    """
    if scenario is not None and protocol is None and _scenario_protocol(scenario) == "headline":
        _run_headline(scenario, plot, json_out, trials=trials, seed=seed)
        return
    spec = _spec(scenario, protocol, n, t, trials, seed, param, inputs)
    res = run_spec(spec, executor=executor, scheduler=scheduler, workers=workers)
    summary = res.summary()
    if plot is not None:
        title = f"{summary['protocol']}, n={summary['n']}, R={summary['trials']}"
        if res.series_example is not None:  # a continual release: the series and its per-step error
            theory = getattr(res.protocol, "variance", None)
            plot_series(str(plot), *res.series_example, res.series_error_std,
                        float(theory) ** 0.5 if isinstance(theory, (int, float)) else None, title)
        else:
            plot_estimates(str(plot), res.estimate, res.true_value, title)
        summary["plot"] = str(plot)
    if json_out:
        print(json.dumps(summary))
    else:
        stdout.print(_table(f"privsim run: {summary['protocol']}",
                            [(k, v) for k, v in summary.items() if k != "params"] +
                            [(f"param {k}", v) for k, v in summary["params"].items()]))


def _scenario_protocol(path: Path) -> str | None:
    import tomllib

    try:
        return tomllib.loads(Path(path).read_text()).get("protocol")
    except (OSError, tomllib.TOMLDecodeError):
        return None  # load_scenario reports the problem


def _run_headline(path: Path, plot: Path | None, json_out: bool, trials: int | None, seed: int | None) -> None:
    from privsim.analysis.headline import headline_study, load_headline_scenario, plot_headline

    kwargs = load_headline_scenario(path)
    kwargs.update({k: v for k, v in (("trials", trials), ("seed", seed)) if v is not None})
    with progress_bar(len(kwargs["ns"]), "headline: n values") as advance:
        data = headline_study(**kwargs, progress=lambda _: advance(1))
    if plot is not None:
        plot_headline(str(plot), data)
        data["plot"] = str(plot)
    if json_out:
        print(json.dumps(data))
        return
    table = Table(title="privsim run: headline comparison (rmse and messages per run)")
    keys = [k for k in ("rr", "secure_sum", "ck_sum") if k in data]
    for col in ["n", "trials"] + [f"{k} {m}" for k in keys for m in ("rmse", "messages")]:
        table.add_column(col)
    for i, nn in enumerate(data["ns"]):
        cells = [str(nn), str(data["trials"][i])]
        for k in keys:
            cells += [f"{data[k]['rmse'][i]:.3f}", str(data[k]["messages"][i])]
        table.add_row(*cells)
    stdout.print(table)


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
    _check_counts(spec)
    proto = spec.build()
    x = make_inputs(proto, spec.inputs, spec.n, spec.seed)  # type: ignore[arg-type]
    res = simulate(proto, x, trials=spec.trials, seed=spec.seed, t=spec.t, coalition=coalition)
    view = res.view(coalition)
    if json_out:
        print(json.dumps(view.to_dict(trials=spec.trials)))
        return
    for i in range(spec.trials):
        table = Table(title=f"view of coalition {{{', '.join(map(str, view.coalition))}}}, trial {i}")
        for col in ("round", "from", "to", "value"):
            table.add_column(col)
        for m in view.coalition:
            if m in view.inputs:
                table.add_row("-", "input", str(m), str(np.asarray(view.inputs[m])[i].tolist()))
            for k, d in enumerate(view.randomness.get(m, [])):
                table.add_row("-", f"rand #{k}", str(m), _short(np.asarray(d)[i]))
        for r, s, d, v in view.rows(i):
            table.add_row(str(r), str(s), str(d), _short(v))
        for m, v in view.outputs.items():
            table.add_row("-", "output", str(m), _short(np.asarray(v)[i] if np.ndim(v) else v))
        stdout.print(table)


def _short(v: Any) -> str:
    arr = np.asarray(v)
    if arr.dtype.kind == "f":
        text = np.array2string(arr, precision=4, threshold=8) if arr.ndim else f"{float(arr):.6g}"
    else:
        text = str(arr.tolist()) if arr.size <= 8 else np.array2string(arr, threshold=8)
    return text


@app.command("audit")
def audit_cmd(
    scenario: Path | None = _SCENARIO,
    protocol: str | None = _PROTOCOL,
    n: int | None = _N,
    t: int | None = _T,
    trials: int | None = _TRIALS,
    seed: int | None = _SEED,
    param: list[str] | None = _PARAM,
    inputs: str | None = _INPUTS,
    coalition: str | None = typer.Option(None, "--coalition", help="Coalition ids, e.g. 0,1 or C or C,0, "
                                           "or public (what the protocol publishes)."),
    neighbor: int | None = typer.Option(None, "--neighbor", help="The party outside the coalition whose "
                                           "input differs between x and x'."),
    delta: float | None = typer.Option(None, "--delta", help="delta of the (eps, delta) statement "
                                       "[the delta of the claim it is judged against]."),
    confidence: float | None = typer.Option(None, "--confidence", help="Confidence of the bound [0.95]."),
    json_out: bool = _JSON,
    plot: Path | None = typer.Option(None, "--plot", help="Write a PNG: the score under x and x' with the event."),
    executor: str | None = _EXECUTOR,
    scheduler: str | None = _SCHEDULER,
    workers: int | None = _WORKERS,
) -> None:
    """Audit a coalition's view: a sound lower bound on epsilon, against the protocol's claim."""
    from privsim.analysis.audit import DEFAULT_AUDIT_TRIALS, audit, plan_audit_batches

    spec = _spec(scenario, protocol, n, t, trials, seed, param, inputs)
    if trials is None and spec.trials == RunSpec().trials:  # named by neither the flag nor the scenario
        spec = spec.with_overrides(trials=DEFAULT_AUDIT_TRIALS)
    _check_counts(spec)
    extra = spec.extra
    coalition = coalition if coalition is not None else extra.get("coalition")
    neighbor = neighbor if neighbor is not None else extra.get("neighbor")
    if coalition is None:
        raise ParameterError("coalition is required (--coalition IDS, e.g. 0,1 or C)")
    if neighbor is None:
        raise ParameterError("neighbor is required (--neighbor J, a party outside the coalition)")
    if isinstance(coalition, list):
        coalition = ",".join(map(str, coalition))
    proto = spec.build()
    x = make_inputs(proto, spec.inputs, spec.n, spec.seed)  # type: ignore[arg-type]
    total = 2 * len(plan_audit_batches(spec.trials, spec.n))  # type: ignore[arg-type]
    with progress_bar(total, f"audit {proto.name}: batches") as advance:
        result = audit(proto, x, coalition=str(coalition), neighbor=int(neighbor), trials=spec.trials,
                       seed=spec.seed, t=spec.t,
                       delta=delta if delta is not None else extra.get("delta"),
                       confidence=float(confidence if confidence is not None else extra.get("confidence", 0.95)),
                       progress=lambda k: advance(1), executor=executor or extra.get("executor"),
                       scheduler=scheduler, workers=workers)
    data = result.to_dict()
    if plot is not None:
        _audit_plot(str(plot), proto, x, result)
        data["plot"] = str(plot)
    if json_out:
        print(json.dumps(data))
    else:
        stdout.print(_table(f"privsim audit: {proto.name}, coalition {{{','.join(result.coalition)}}} "
                            f"vs party {result.neighbor}", [(k, v) for k, v in data.items() if k != "params"]))


def _audit_plot(path: str, proto: Any, x: np.ndarray, result: Any) -> None:
    from privsim.analysis.audit import _derived_seed, neighbouring_inputs, sample_views

    xp = neighbouring_inputs(proto, x, result.neighbor)
    coalition = ",".join(result.coalition)
    size = min(result.trials, 1 << 15)
    vx, _ = sample_views(proto, x, coalition=coalition, trials=size, seed=_derived_seed(result.seed, 2), t=result.t)
    vxp, _ = sample_views(proto, xp, coalition=coalition, trials=size, seed=_derived_seed(result.seed, 3), t=result.t)
    plot_audit(path, vx, vxp, result.event_object,
               f"{proto.name}: coalition {{{coalition}}} vs party {result.neighbor}; "
               f"epsilon >= {result.epsilon_lower:.3f} ({result.confidence:.0%})")


@app.command()
def bounds(
    scenario: Path | None = _SCENARIO,
    protocol: str | None = _PROTOCOL,
    n: int | None = _N,
    t: int | None = _T,
    param: list[str] | None = _PARAM,
    audit_lonely: bool = typer.Option(False, "--audit", help="Audit the first lonely party against the "
                                      "coalition of its neighbours (the reduction to the local model)."),
    trials: int | None = typer.Option(None, "--trials", help="Trials per input for --audit [200000]."),
    seed: int | None = _SEED,
    inputs: str | None = _INPUTS,
    json_out: bool = _JSON,
) -> None:
    """Messages vs n(t+1)/4 and n(t+1)/2, popular and lonely parties, and lonely parties' neighbour coalitions."""
    from privsim.analysis.bounds import analyze_schedule

    spec = _spec(scenario, protocol, n, t, trials, seed, param, inputs)
    _check_counts(spec)
    proto = spec.build()
    tt = proto.default_t(spec.n) if spec.t is None else spec.t  # type: ignore[arg-type]
    proto.check_setting(spec.n, tt)  # type: ignore[arg-type]
    report = analyze_schedule(proto.cached_schedule(spec.n, tt), tt)  # type: ignore[arg-type]
    data: dict[str, Any] = {"protocol": proto.name, "params": proto.parameters, **report.to_dict()}
    if audit_lonely:
        data["audit"] = _audit_lonely(proto, spec, tt, report, trials or 200_000)
    if json_out:
        print(json.dumps(data))
        return
    rows = [(k, v) for k, v in data.items() if k not in ("params", "lonely_coalitions", "audit")]
    rows += [(f"neighbours of lonely {p}", ",".join(c)) for p, c in data["lonely_coalitions"].items()]
    rows += [(f"audit {k}", v) for k, v in (data.get("audit") or {}).items() if k != "params"]
    stdout.print(_table(f"privsim bounds: {proto.name}, n={spec.n}, t={tt}", rows))


def _audit_lonely(proto: Any, spec: RunSpec, t: int, report: Any, trials: int) -> dict[str, Any] | None:
    """Audit the first lonely party (with a non-empty neighbourhood) against its neighbours."""
    from privsim.analysis.audit import audit, plan_audit_batches

    target = next(((p, c) for p, c in report.lonely_coalitions.items() if c), None)
    if target is None:
        return None
    party, coalition = target
    x = make_inputs(proto, spec.inputs, spec.n, spec.seed)  # type: ignore[arg-type]
    total = 2 * len(plan_audit_batches(trials, spec.n))  # type: ignore[arg-type]
    with progress_bar(total, f"audit lonely party {party}: batches") as advance:
        result = audit(proto, x, coalition=",".join(map(str, coalition)), neighbor=party, trials=trials,
                       seed=spec.seed, t=t, progress=lambda k: advance(1))
    return result.to_dict()


@app.command()
def bench(
    only: list[str] | None = typer.Option(None, "--only", help="Run only these suites (e.g. engine)."),
    json_out: bool = _JSON,
) -> None:
    """Run the benchmark suite (bench/*.py) and print its named figures (ratios measured in-process)."""
    import importlib.util

    folder = Path(__file__).resolve().parent.parent / "bench"
    scripts = sorted(folder.glob("bench_*.py")) if folder.is_dir() else []
    if not scripts:
        raise ParameterError(f"no benchmark suite found in {folder} (it ships with the source checkout)")
    names = [p.stem.removeprefix("bench_") for p in scripts]
    unknown = sorted(set(only or []) - set(names))
    if unknown:
        raise ParameterError(f"--only: unknown suite {unknown[0]!r} (allowed: {', '.join(names)})")
    results: dict[str, Any] = {}
    for path, name in zip(scripts, names):
        if only and name not in only:
            continue
        stderr.print(f"bench: {name} ...", markup=False)
        spec = importlib.util.spec_from_file_location(f"privsim_bench_{name}", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        results[name] = module.main()
    if json_out:
        print(json.dumps(results))
    else:
        stdout.print(_table("privsim bench", [(f"{s}.{k}", v) for s, figs in results.items()
                                              for k, v in figs.items()]))


@app.command("protocols")
def list_protocols(json_out: bool = _JSON) -> None:
    """List the protocols and their parameters."""
    info = {name: {k: {"default": p.default if isinstance(p.default, (int, float, str, bool)) else None,
                       "allowed": p.allowed(), "doc": p.doc} for k, p in cls.params.items()}
            for name, cls in sorted(REGISTRY.items())}
    if json_out:
        print(json.dumps(info))
        return
    table = Table(title="privsim protocols")
    for col in ("protocol", "parameter", "default", "allowed", "meaning"):
        table.add_column(col)
    for name, params in info.items():
        for i, (k, p) in enumerate(params.items() or [("-", {"default": "", "allowed": "", "doc": ""})]):
            table.add_row(name if i == 0 else "", k, str(p["default"]), p["allowed"], p["doc"])
    stdout.print(table)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the CLI; user errors print one line and exit with code 2.

    Example: ``main(["run", "--protocol", "randomized-response", "--n", "100", "--json"])``
    prints one JSON object, as ``privsim run ... --json`` does.
    """
    _SCENARIO_FILE.clear()
    try:
        app(args=argv, standalone_mode=False)
    except PrivsimError as exc:
        message = str(exc)
        if _SCENARIO_FILE and not message.startswith(_SCENARIO_FILE[0]):
            message = f"{_SCENARIO_FILE[0]}: {message}"
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)
    except (typer.Exit, click.exceptions.Exit) as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, click.exceptions.Abort):
        print("aborted", file=sys.stderr)
        sys.exit(1)
    except (_UsageError, click.ClickException) as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `privsim`: show the help
            print(exc.format_message())
            sys.exit(0)
        print(f"error: {exc.format_message()}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
