"""What every ``privsim`` command shares: checks before a run, progress, interruption, output.

- :func:`check_plot_path`, :func:`check_executor_flags` and :func:`check_resources` refuse
  bad input before any work (one line naming the field, exit 2);
- :func:`progress_bar` draws a bar on stderr that counts trials or batches, with an ETA,
  in 80 columns, and records how many batches are done for the interruption line;
- :func:`interruptible` turns SIGINT and SIGTERM into :class:`Interrupted`: worker processes
  are ended at once and the command prints ``interrupted after N of M batches`` and exits
  with 130 (SIGINT) or 143 (SIGTERM);
- :func:`print_json` prints strictly valid JSON (no bare NaN or Infinity);
- :func:`protocols_table` and :func:`protocol_detail` format ``privsim protocols`` at 80 columns.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from privsim import resources
from privsim.errors import ParameterError
from privsim.interrupts import Interrupted, interrupt, interrupted

__all__ = ["PLOT_FORMATS", "WIDTH", "Interrupted", "WORK", "check_executor_flags", "check_plot_path",
           "check_resources", "interruptible", "interrupted_line", "jsonable", "print_json", "progress_bar",
           "protocol_detail", "protocols_table", "report_interruption", "value_text"]

T = TypeVar("T")
#: The width every table and bar fits in.
WIDTH = 80
#: The figure formats ``--plot`` writes.
PLOT_FORMATS = (".png", ".pdf", ".svg")

#: ``--workers`` beyond this many per core only queue for the CPU (and each holds an interpreter).
WORKERS_PER_CORE = 4
#: Batches done and planned by the running command (for the interruption line).
WORK: dict[str, int] = {"done": 0, "total": 0}


# ------------------------------------------------------------------ checks before a run
def check_plot_path(path: Path | str | None) -> Path | None:
    """Check a ``--plot`` target before the run: a file name ending in .png, .pdf or .svg, in
    a folder that exists and is writable (tried by creating a file there).

    >>> check_plot_path("x.foo")
    Traceback (most recent call last):
    privsim.errors.ParameterError: plot: 'x.foo' must end in .png, .pdf or .svg (got '.foo')
    """
    if path is None:
        return None
    text = str(path)
    allowed = ", ".join(PLOT_FORMATS[:-1]) + " or " + PLOT_FORMATS[-1]
    p = Path(text)
    if not text.strip():
        raise ParameterError(f"plot: give a file name ending in {allowed} (got '')")
    if p.is_dir():
        raise ParameterError(f"plot: {text!r} is a folder; give a file name ending in {allowed}")
    if p.suffix.lower() not in PLOT_FORMATS:
        raise ParameterError(f"plot: {text!r} must end in {allowed} (got {p.suffix or 'no extension'!r})")
    folder = p.parent
    if not folder.is_dir():
        raise ParameterError(f"plot: folder {str(folder)!r} does not exist")
    if p.exists() and (not p.is_file() or not os.access(p, os.W_OK)):
        raise ParameterError(f"plot: {text!r} exists and cannot be overwritten")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".privsim-check-", suffix=p.suffix):
            pass
    except OSError as exc:
        raise ParameterError(f"plot: folder {str(folder)!r} is not writable ({exc.strerror})") from None
    return p


_SCHEDULER = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://[^:/\s]+:\d{1,5}$")


def check_executor_flags(executor: str | None, scheduler: str | None, workers: int | None) -> None:
    """Refuse executor flags that would be ignored or fail deep inside a run.

    >>> check_executor_flags("local", None, 4)
    Traceback (most recent call last):
    privsim.errors.ParameterError: workers: only with --executor processes or dask (got --workers 4 with local)
    """
    from privsim.executors import EXECUTORS

    kind = executor or "local"
    if kind not in EXECUTORS:
        raise ParameterError(f"executor must be one of {', '.join(EXECUTORS)} (got {kind!r})")
    if workers is not None and workers < 1:
        raise ParameterError(f"workers must be >= 1 (got {workers})")
    cores = os.cpu_count() or 1
    if workers is not None and workers > WORKERS_PER_CORE * cores and scheduler is None:
        raise ParameterError(f"workers must be <= {WORKERS_PER_CORE} per core, {WORKERS_PER_CORE * cores} on this "
                             f"machine's {cores} cores (got {workers})")
    if workers is not None and kind == "local":
        raise ParameterError(f"workers: only with --executor processes or dask (got --workers {workers} with local)")
    if scheduler is not None and kind != "dask":
        raise ParameterError("scheduler: only with --executor dask")
    if scheduler is not None and not _SCHEDULER.match(scheduler):
        raise ParameterError(f"scheduler must look like tcp://HOST:PORT (got {scheduler!r})")


def check_resources(n: int, trials: int, build: Callable[[], T], *, executor: str | None, workers: int | None,
                    max_memory: str | None, max_time: str | None = None, audit: Any = None,
                    warn: Callable[[str], None] | None = None, cohorts: bool = False) -> T:
    """Build a run's plan with ``build()`` once its peak memory and time look affordable
    (:mod:`privsim.resources`); returns the plan.

    A bound from n and trials alone (and ``audit``, the audit's
    :func:`~privsim.plan.audit_split`) comes first, so a hopeless run is refused before its
    inputs and schedule are built; then the plan's own estimate. Refuses
    (:class:`~privsim.errors.ResourceError`) when an estimate exceeds the memory available
    or ``max_memory``, or the duration ``max_time`` (``--max-time``; ``None``: no bound);
    calls ``warn`` with one line when it expects over a minute. ``cohorts``: the protocol has
    a cohort form (:func:`privsim.resources.has_cohort_form`; the bound is then a cohort member's).

    >>> from privsim.plan import plan_run
    >>> from privsim.protocols import RandomizedResponse
    >>> check_resources(100, 1000, lambda: plan_run(RandomizedResponse(), n=100, trials=1000, split=True),
    ...                 executor=None, workers=None, max_memory="4G").trials
    1000
    >>> check_resources(10**9, 10, lambda: None, executor=None, workers=None, max_memory="4G")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    privsim.errors.ResourceError: n, trials: this run needs about 4.4 TiB of memory (estimated), above the 4.0 GiB ...
    """
    limit = resources.parse_size(max_memory) if max_memory is not None else resources.available_memory()
    seconds = resources.parse_duration(max_time) if max_time is not None else None
    w = resources.cpu_workers(executor, workers)
    given = max_memory is not None
    floor = resources.floor_estimate(n, trials, workers=w, audit=audit, cohorts=cohorts)
    resources.check_memory(floor, limit, given=given)
    resources.check_time(floor, seconds)
    plan = build()
    est = resources.estimate(plan, workers=w)  # type: ignore[arg-type]
    resources.check_memory(est, limit, given=given)
    resources.check_time(est, seconds)
    if est.seconds > 60 and warn is not None:
        warn(f"privsim: this will take about {resources.format_seconds(est.seconds)} (estimated; "
             f"{resources.format_bytes(est.memory)} peak, {est.batches} batches); Ctrl-C stops it")
    return plan


# ------------------------------------------------------------------ progress
@contextmanager
def progress_bar(total: int, label: str, *, unit: str = "batches", batches: int | None = None,
                 enabled: bool | None = None) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr: ``advance(amount, batches_done)`` after each piece of work.

    ``total`` counts ``unit`` (trials or batches); ``batches`` is the number of batches
    (for the interruption line; default ``total``). ``enabled``: ``None`` shows the bar on a
    terminal once the work has taken over a second, ``True`` always (from the start),
    ``False`` never. The bar fits in 80 columns, shows the time remaining and stays on
    screen at 100% when the work is done.

    >>> with progress_bar(3000, "demo", unit="trials", batches=2, enabled=False) as advance:
    ...     advance(2048, 1)
    ...     advance(952, 2)
    >>> WORK
    {'done': 2, 'total': 2}
    """
    WORK.update(done=0, total=batches if batches is not None else total)
    show = sys.stderr.isatty() if enabled is None else enabled
    delay = 1.0 if enabled is None else 0.0
    state: dict[str, Any] = {"start": time.perf_counter(), "bar": None, "task": None, "done": 0}
    text = label if len(label) <= 20 else label[:19] + "…"  # label, bar, %, N/M, unit, ETA: <= 80 columns

    def advance(amount: int = 1, batches_done: int | None = None) -> None:
        state["done"] += amount
        WORK["done"] = batches_done if batches_done is not None else WORK["done"] + 1
        if state["bar"] is None and show and time.perf_counter() - state["start"] >= delay:
            bar = Progress(TextColumn(text), BarColumn(bar_width=16), TaskProgressColumn(), MofNCompleteColumn(),
                           TextColumn(unit), TimeRemainingColumn(), transient=False, expand=False,
                           console=Console(stderr=True, width=min(WIDTH, Console(stderr=True).width),
                                           force_terminal=True if enabled is True else None))
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task(text, total=total)
        if state["bar"] is not None:
            state["bar"].update(state["task"], completed=state["done"])

    if show and delay == 0:
        advance(0, 0)
    try:
        yield advance
        if state["bar"] is not None:
            state["bar"].update(state["task"], completed=total)
    finally:
        if state["bar"] is not None:
            state["bar"].stop()


# ------------------------------------------------------------------ interruption
def _on_signal(signum: int, frame: Any) -> None:
    if interrupted() is not None:  # a second signal while unwinding: already on the way out
        return
    from privsim.executors import end_workers

    end_workers()  # at once: an executor's close() would otherwise wait for running batches
    interrupt(signum)  # raises Interrupted here, or cancels the party loop, which then raises it


def report_interruption() -> None:
    """Print the interruption line on stderr.

    Example: ``report_interruption()`` prints ``interrupted after 3 of 10 batches``.
    """
    print(interrupted_line(), file=sys.stderr)


@contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM stop the command with :class:`Interrupted`
    (worker processes are ended first; a party loop unwinds through cancellation,
    :func:`privsim.interrupts.interrupt`). Handlers are restored on exit. Only in the
    main thread (elsewhere signals cannot be handled).

    Example (how :func:`privsim.cli.main` uses it)::

        with interruptible():
            try:
                run_the_command()
            except BaseException:
                if interrupted() is None:
                    raise
                report_interruption()   # "interrupted after N of M batches"
    """
    interrupted(clear=True)
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    hook = sys.unraisablehook
    # raised where Python only reports it (a __del__): the signal is kept, the next run stops
    sys.unraisablehook = lambda u: None if isinstance(u.exc_value, Interrupted) else hook(u)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for s, handler in previous.items():
            signal.signal(s, handler)


def interrupted_line() -> str:
    """``interrupted after N of M batches`` for the running command (``interrupted`` for one
    without batches, e.g. ``privsim party``).

    >>> WORK.update(done=3, total=10); interrupted_line()
    'interrupted after 3 of 10 batches'
    """
    if not WORK["total"] and not WORK["done"]:
        return "interrupted"
    return f"interrupted after {WORK['done']} of {max(WORK['total'], WORK['done'])} batches"


# ------------------------------------------------------------------ output
def jsonable(value: Any) -> Any:
    """``value`` with numpy types made plain and non-finite floats made ``None`` (JSON has neither).

    >>> jsonable({"a": np.float64("nan"), "b": (np.int64(2), 1.5), "c": np.arange(2)})
    {'a': None, 'b': [2, 1.5], 'c': [0, 1]}
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


#: Where :func:`print_json` writes while :func:`json_channel` holds stdout for the JSON alone.
_JSON_OUT: list[Any] = []


def print_json(data: Any) -> None:
    """Print one strictly valid JSON object on stdout.

    >>> print_json({"rmse": float("nan"), "n": np.int64(4)})
    {"rmse": null, "n": 4}
    """
    print(json.dumps(jsonable(data), allow_nan=False), file=_JSON_OUT[-1] if _JSON_OUT else sys.stdout)


@contextmanager
def json_channel(active: bool) -> Iterator[None]:
    """With ``active`` (``--json``), keep stdout for the JSON object alone: whatever else is
    written there meanwhile (a party's ``print()``, in this process or in a worker process
    started meanwhile) goes to stderr.

    >>> with json_channel(True):
    ...     print_json({"a": 1})
    {"a": 1}
    """
    if not active:
        yield
        return
    real = sys.stdout
    try:
        real_fd = real.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stream (tests, notebooks)
        real_fd = None
    if real_fd != 1:
        _JSON_OUT.append(real)
        sys.stdout = sys.stderr
        try:
            yield
        finally:
            sys.stdout = real
            _JSON_OUT.pop()
        return
    real.flush()
    saved = os.dup(1)
    os.dup2(2, 1)  # file descriptor 1, which worker processes inherit, is stderr meanwhile
    out = open(saved, "w", closefd=False)  # noqa: SIM115 - flushed and closed below
    _JSON_OUT.append(out)
    try:
        yield
        out.flush()  # inside: a full disk is reported by the caller
    finally:
        _JSON_OUT.pop()
        real.flush()
        os.dup2(saved, 1)
        os.close(saved)


def value_text(v: Any) -> str:
    """A table cell: integers (also integral floats) as integers, other floats with 6 digits.

    >>> value_text(1234567.0), value_text(0.123456789), value_text(True)
    ('1234567', '0.123457', 'True')
    >>> value_text({"ratio": [np.float64(2.5), np.int64(3)]})  # never np.float64(...) in a table
    '{ratio: [2.5, 3]}'
    """
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value_text(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {value_text(x)}" for k, x in v.items()) + "}"
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.6g}"
    return str(v)


# ------------------------------------------------------------------ privsim protocols
def _summary(cls: type) -> str:
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.split())


def _default_text(p: Any) -> str:
    from privsim.protocols.base import REQUIRED

    return "required" if p.default is REQUIRED else value_text(p.default) if p.default is not None else "auto"


def protocols_table(registry: Any) -> Table:
    """``privsim protocols``: one row per protocol (name; what it is and its parameters), 80 columns.

    ``registry`` maps names to protocol classes (e.g. :data:`privsim.protocols.REGISTRY`).

    >>> from privsim.protocols import REGISTRY
    >>> protocols_table({"randomized-response": REGISTRY["randomized-response"]}).row_count
    1
    """
    table = Table(title="privsim protocols (privsim protocols NAME: one in detail)", width=WIDTH, show_lines=True)
    table.add_column("protocol", no_wrap=True)
    table.add_column("what it is; its parameters", ratio=1)
    for name, cls in sorted(registry.items()):
        table.add_row(name, f"{_summary(cls)}\nparameters: {', '.join(cls.params) or 'none'}")
    return table


def protocol_detail(name: str, cls: type) -> Table:
    """``privsim protocols NAME``: every parameter with its allowed values, default and meaning.

    >>> from privsim.protocols import REGISTRY
    >>> protocol_detail("secure-sum", REGISTRY["secure-sum"]).row_count == len(REGISTRY["secure-sum"].params)
    True
    """
    table = Table(title=f"{name}: {_summary(cls)}", width=WIDTH, title_justify="left", show_lines=True)
    table.add_column("parameter", no_wrap=True)
    table.add_column("allowed; default, then what it means", ratio=1)
    for key, p in cls.params.items():  # type: ignore[attr-defined]
        table.add_row(key, f"{p.allowed()}; default {_default_text(p)}\n{p.doc}")
    if not cls.params:  # type: ignore[attr-defined]
        table.add_row("-", "no parameters")
    return table
