"""Issue 15: every bad input gets one line naming the field (exit 2), interruption, resources up front,
progress, help and output, plots."""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_cli import cli  # (code, stdout, stderr) of one privsim command, in this process

import privsim
from privsim.errors import PrivsimError
from privsim.protocols import get_protocol
from privsim.simulate import run_trials

ROOT = Path(__file__).resolve().parent.parent
P = ["run", "--protocol", "randomized-response", "--n", "10", "--trials", "10"]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "binary.toml").write_bytes(b"\x80\x81\xff\xfe")
    (tmp_path / "DIR.toml").mkdir()
    (tmp_path / "DIR").mkdir()
    return tmp_path


# Every row of the table but the first (the audit's default --trials): the command,
# and what the one line must name. {tmp} is a fresh folder with binary.toml, DIR.toml/ and DIR/.
ROWS = [
    ([*P, "--plot", "/nonexistent/dir/x.png"], "plot: folder '/nonexistent/dir' does not exist"),
    ([*P, "--plot", "{tmp}/x.foo"], "must end in .png, .pdf or .svg (got '.foo')"),
    ([*P, "--plot", "/proc/version"], "plot: '/proc/version' must end in .png"),
    ([*P, "--plot", "/proc/x.png"], "plot: folder '/proc' is not writable"),
    ([*P, "--plot", ""], "plot:"),
    ([*P, "--plot", "{tmp}/DIR"], "is a folder; give a file name ending in .png, .pdf or .svg"),
    ([*P, "--plot", "{tmp}/noext"], "must end in .png, .pdf or .svg (got 'no extension')"),
    (["run", "{tmp}/binary.toml"], "is not UTF-8 text"),
    (["run", "{tmp}/DIR.toml"], "is a folder (give a .toml file)"),
    (["run", "/dev/null"], "'/dev/null' is not a regular file"),
    ([*P, "--executor", "dask", "--scheduler", "notaurl"], "scheduler must look like tcp://HOST:PORT (got 'notaurl')"),
    (["run", "--protocol", "secure-sum", "--n", "10", "--t", "10"], "t must satisfy 0 <= t < n = 10 (got 10)"),
    (["run", "--protocol", "dist-alpha", "--n", "10", "--t", "10"], "t must satisfy 0 <= t < n = 10 (got 10)"),
    ([*P, "--param", "epsilon=1e308", "--json"], "epsilon must be <= 1e+15 (got 1e+308)"),
    (["run", "--protocol", "secure-sum", "--n", "10", "--param", "epsilon=1e-300"],
     "epsilon = 1e-300 is too small for n = 10"),
    (["run", "--protocol", "randomized-response", "--n", "1000000000", "--trials", "10"],
     "n, trials: this run needs about 1.3 TiB of memory (estimated)"),  # in cohorts (per party: 4.4 TiB)
    (["run", "--protocol", "randomized-response", "--n", "10000000", "--trials", "10", "--max-memory", "6G"],
     "above the 6.0 GiB --max-memory"),
    ([*P, "--trials", "1000000000000"], "n, trials: this run needs about"),
    (["audit", "--protocol", "randomized-response", "--n", "4", "--coalition", "C", "--neighbor", "99",
      "--trials", "5000"], "neighbor: party 99 does not exist (allowed: 0..3"),
    (["views", "--protocol", "randomized-response", "--n", "4", "--coalition", ""], "coalition: give at least one"),
    (["views", "--protocol", "randomized-response", "--n", "4", "--coalition", ",,"], "coalition: give at least one"),
    (["run", "--protocol", "gap-threshold", "--n", "10", "--param", "base=continual-sum"],
     "base must be a registered SUM protocol (allowed: central-gaussian,"),
    (["run", str(ROOT / "scenarios" / "headline.toml"), "--n", "64", "--trials", "10"], "n: the headline scenario"),
    (["run", str(ROOT / "scenarios" / "headline.toml"), "--trials", "10"],
     "trials must be >= 50 for the headline comparison (got 10)"),
    ([*P, "--inputs", "[0,1,1]"], "inputs: 3 values given but n = 10"),
    (["bounds", "--protocol", "secure-sum", "--n", "8", "--t", "2", "--audit"], "audit: nothing to audit"),
    ([*P, "--workers", "0"], "workers must be >= 1 (got 0)"),
    ([*P, "--workers", "4"], "workers: only with --executor processes or dask"),
    ([*P, "--param", "epsilon=1", "--param", "epsilon=2"], "--param epsilon given twice"),
    (["views", "--protocol", "continual-sum", "--n", "100", "--coalition", "C", "--trials", "1"],
     "trials, coalition: the view has 6400 messages"),
]


@pytest.mark.parametrize("args, field", ROWS, ids=[f"{i}:{' '.join(a)[:50]}" for i, (a, _) in enumerate(ROWS)])
def test_every_row_one_line_exit_2(capsys, files, args, field):
    code, out, err = cli(capsys, *[a.replace("{tmp}", str(files)) for a in args])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert field in err, err
    assert len(err) < 400  # no 300-digit numbers


def test_rows_that_now_work(capsys):
    # The fixed bugs among the rows: a list of inputs, tuple outputs in views, base's allowed list.
    code, out, _ = cli(capsys, *P, "--inputs", "[0,1,1,0,1,0,1,0,1,0]", "--json")
    assert code == 0 and json.loads(out)["true_value"] == 5
    code, out, _ = cli(capsys, "views", "--protocol", "dist-alpha", "--n", 16, "--t", 3, "--coalition", 0,
                       "--trials", 1, "--json")
    assert code == 0 and json.loads(out)["trials"][0]["outputs"]["0"][0] == pytest.approx(
        json.loads(out)["trials"][0]["outputs"]["0"][0])
    code, out, _ = cli(capsys, "views", "--protocol", "dist-alpha", "--n", 16, "--t", 3, "--coalition", 0,
                       "--trials", 1)
    assert code == 0 and "output" in out
    _, _, err = cli(capsys, "run", "--protocol", "gap-threshold", "--n", 10, "--param", "base=continual-sum")
    assert "continual-sum" not in err.split("allowed:")[1].split(";")[0]


PY_ROWS = [
    (lambda: privsim.simulate(privsim.protocols.RandomizedResponse(), [0, 1], trials=2.5), "trials must be >= 1"),
    (lambda: privsim.simulate(privsim.protocols.RandomizedResponse(), [0, 1], trials="3"), "trials"),
    (lambda: privsim.simulate(privsim.protocols.RandomizedResponse(), [0, 1], trials=True), "trials"),
    (lambda: privsim.simulate(privsim.protocols.RandomizedResponse(), [0, 1], seed=1.5), "seed must be >= 0"),
    (lambda: privsim.simulate(privsim.protocols.RandomizedResponse(), [0, 1], t=1.5), "t must be an int"),
    (lambda: privsim.simulate(privsim.protocols.RandomizedResponse(), [0, 1], seed="abc"), "seed"),
    (lambda: privsim.simulate(privsim.protocols.RandomizedResponse(), [[0, 1], [1]]), "inputs:"),
    (lambda: privsim.protocols.RandomizedResponse(epsilon=True), "epsilon must be float > 0"),
    (lambda: get_protocol("secure-sum", digits=np.int64(50)), "digits must be <= 40 (got 50)"),
    (lambda: run_trials(privsim.protocols.RandomizedResponse(), [0, 1], trials=3.0), "trials"),
]


@pytest.mark.parametrize("call, message", PY_ROWS, ids=[m for _, m in PY_ROWS])
def test_python_rows_raise_privsim_errors(call, message):
    with pytest.raises(PrivsimError) as exc:
        call()
    assert message in str(exc.value) and "np." not in str(exc.value)


def test_audit_refuses_fractional_trials():
    from privsim.analysis.audit import audit

    with pytest.raises(PrivsimError, match=r"trials must be >= 1, an int \(got 5000.5\)"):
        audit(privsim.protocols.RandomizedResponse(), [0, 1], coalition="C", neighbor=1, trials=5000.5)


# ------------------------------------------------------------------ interruption
def _descendants(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue
        for k in kids:
            out |= {k} | _descendants(k)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


_DONE = re.compile(rb"\s([1-9]\d*)/\d+\x1b\[0m (?:trials|batches)")  # the bar's count, once a batch is done


def _left_running(pids: set[int], within: float = 10.0) -> list[int]:
    """The processes of ``pids`` still running after ``within`` seconds (killed ones take a
    moment to be reaped, and the pool's resource tracker to see its parent gone)."""
    deadline = time.monotonic() + within
    while (alive := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def _interrupt(args: list[str], tmp: Path, sig: int = signal.SIGINT) -> tuple[int, str, str, set[int], float]:
    """Start ``privsim ARGS --progress``, wait for the run's own started signal, send ``sig``.

    In process the bar is that signal (it shows once the first batch is under way); with an
    executor, the bar's first finished batch (the workers are up and working). No sleeps:
    a loaded machine only makes the wait longer.
    """
    env = {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "80", "PYTHONWARNINGS": "ignore"}  # (Dask's port notes)
    proc = subprocess.Popen([sys.executable, "-m", "privsim", *args, "--progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    seen: list[bytes] = []
    started = threading.Event()
    workers = "--executor" in args

    def read() -> None:
        for chunk in iter(lambda: proc.stderr.read1(4096), b""):  # type: ignore[union-attr]
            seen.append(chunk)
            if (_DONE.search(b"".join(seen[-2:])) if workers else b"%" in chunk):
                started.set()
        started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert started.wait(120), "the run never showed that it had started"
    children = _descendants(proc.pid)
    sent = time.perf_counter()
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=60)  # (an interrupted run writes nothing on stdout: no pipe fills)
    except subprocess.TimeoutExpired:
        for pid in _descendants(proc.pid) | {proc.pid}:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"still running 60 s after signal {sig}; stderr: {b''.join(seen)[-2000:]!r}")
    took = time.perf_counter() - sent
    out = proc.stdout.read().decode()  # type: ignore[union-attr]
    reader.join(10)
    err = b"".join(seen).decode(errors="replace")
    return code, out, err, children, took


LONG = {
    "run": ["run", "--protocol", "randomized-response", "--n", "2000", "--trials", "400000", "--json"],
    "audit": ["audit", "--protocol", "secure-sum", "--n", "16", "--t", "3", "--coalition", "0,1,2,3",
              "--neighbor", "7", "--trials", "4000000", "--json"],
    "tcp": ["run", "--protocol", "randomized-response", "--n", "8", "--trials", "20000000", "--transport", "tcp",
            "--json"],
}


@pytest.mark.parametrize("command, executor, sig", [("run", "local", signal.SIGINT), ("audit", "local", signal.SIGINT),
                                                    ("run", "processes", signal.SIGTERM),
                                                    ("audit", "processes", signal.SIGINT),
                                                    ("run", "dask", signal.SIGTERM),
                                                    ("audit", "dask", signal.SIGINT),
                                                    ("tcp", "local", signal.SIGINT)])
def test_interrupt_stops_cleanly(tmp_path, command, executor, sig):
    # through trio's cancellation (no os._exit, no watchdog): the exit code, one line, no worker left
    args = LONG[command] + (["--executor", executor, "--workers", "2"] if executor != "local" else [])
    code, out, err, workers, _ = _interrupt(args, tmp_path, sig)
    assert code == 128 + sig
    assert out == ""  # never a partial result as a whole one
    lines = [ln for ln in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err).replace("\r", "\n").splitlines()
             if ln.strip() and "%" not in ln and not ln.startswith("privsim: this will take")]
    assert len(lines) == 1 and re.fullmatch(r"interrupted after \d+ of \d+ batches", lines[0]), err
    if executor != "local":
        assert workers, "the executor's workers were not running"
    assert not _left_running(workers), "worker processes left behind"


# A script started from a terminal has Python's own Ctrl-C handler; one started by a background
# job inherits SIGINT ignored (POSIX), and Python then keeps it ignored: the tests' scripts
# restore the handler, so that they behave as a user's script does whatever runs the suite.
_AS_IN_A_TERMINAL = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"

_TCP_SCRIPT = _AS_IN_A_TERMINAL + """
import subprocess, sys
import numpy as np
import privsim.transport.launcher as launcher
from privsim.protocols import RandomizedResponse

own = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
print(own.pid, flush=True)
barrier = launcher._start_barrier

def starting(*args, **kwargs):
    print("starting", flush=True)  # the run's own signal: every party process exists, none has set up
    return barrier(*args, **kwargs)

launcher._start_barrier = starting
launcher.TcpTransport(timeout=30).run(RandomizedResponse(), np.zeros(8), t=1, trials=10, seed=0)
"""


def test_sigint_stops_the_tcp_api_while_parties_start(tmp_path):
    # A script driving TcpTransport.run: Ctrl-C while the parties start is KeyboardInterrupt,
    # no party process is left, and the script's own child process keeps running.
    script = tmp_path / "drive.py"
    script.write_text(_TCP_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    own = int(proc.stdout.readline())  # type: ignore[union-attr]
    try:
        assert proc.stdout.readline() == "starting\n"  # type: ignore[union-attr]
        parties = _descendants(proc.pid) - {own}
        proc.send_signal(signal.SIGINT)
        code, err = proc.wait(timeout=60), proc.stderr.read()  # type: ignore[union-attr]
        assert code == -signal.SIGINT and err.rstrip().endswith("KeyboardInterrupt"), err
        assert len(parties) >= 9, "the party processes were not started"
        assert not _left_running(parties), "party processes left behind"
        assert _alive(own), "the script's own child process was ended"
    finally:
        os.kill(own, signal.SIGKILL)


_API_SCRIPT = _AS_IN_A_TERMINAL + """
import subprocess, sys
import numpy as np
import privsim
from privsim.protocols import RandomizedResponse, get_protocol
from privsim.simulate import run_trials


def started(done):
    if done == 1:
        print("started", flush=True)  # the run's own signal: its first batch is done


if __name__ == "__main__":  # (Dask's workers are spawned: they import this file)
    own = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    print(own.pid, flush=True)
    call = sys.argv[1]
    if call == "run-dask":
        run_trials(RandomizedResponse(), n=2000, trials=400_000, seed=0, executor="dask", workers=2,
                           progress=started)
    elif call == "audit-dask":
        privsim.audit(get_protocol("secure-sum"), n=16, t=3, coalition="0,1,2,3", neighbor=7, trials=4_000_000,
                      seed=0, executor="dask", workers=2, progress=started)
    elif call == "run-tcp":
        run_trials(RandomizedResponse(), np.zeros(8, dtype=int), trials=20_000_000, seed=0, transport="tcp",
                           progress=started)
"""


def _same_command(args: list[str]) -> set[int]:
    want = "\0".join(map(str, args)) + "\0"
    found = set()
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if (entry / "cmdline").read_text() == want:
                found.add(int(entry.name))
    return found


@pytest.mark.parametrize("call", ["run-dask", "audit-dask", "run-tcp"])
def test_sigint_to_a_script_is_keyboard_interrupt_and_ends_only_our_processes(tmp_path, call):
    # Issue 25, through the Python API: Ctrl-C reaches the caller as KeyboardInterrupt, the
    # executor's workers (or the TCP run's parties) are ended, and the script's own child
    # process keeps running. (An audit has no transport: over TCP only a run.)
    script = tmp_path / "drive.py"
    script.write_text(_API_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), call], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "TMPDIR": str(tmp_path), "PYTHONWARNINGS": "ignore"})
    own = int(proc.stdout.readline())  # type: ignore[union-attr]
    try:
        assert proc.stdout.readline() == "started\n", proc.stderr.read()  # type: ignore[union-attr]
        while not (ours := _descendants(proc.pid) - {own}):  # over TCP, the next batch's parties
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)  # a poll interval, not a synchronization
        proc.send_signal(signal.SIGINT)
        code, err = proc.wait(timeout=120), proc.stderr.read()  # type: ignore[union-attr]
        assert code == -signal.SIGINT and err.rstrip().endswith("KeyboardInterrupt"), err
        assert not _left_running(ours), "worker or party processes left behind"
        # and no party forked later (a fork keeps the script's command line) outlived the script
        assert not _left_running({p for p in _same_command(proc.args) if p != own}), "party processes left behind"
        assert _alive(own), "the script's own child process was ended"
    finally:
        os.kill(own, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _child_cpu(args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return p, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_billion_parties_refused_at_once():
    # CPU seconds, not wall-clock (the machine may be busy), beyond starting the command at all:
    # the refusal builds nothing for 10^9 parties (a schedule alone would take minutes).
    _, start = _child_cpu(["-c", "import privsim.cli"])
    p, cpu = _child_cpu(["-m", "privsim", "run", "--protocol", "randomized-response", "--n", "1000000000",
                         "--trials", "10"])
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert re.search(r"needs about [\d.]+ TiB of memory \(estimated\), above the [\d.]+ [GMT]iB", p.stderr)
    assert cpu - start < 0.5, (cpu, start)


# ------------------------------------------------------------------ resources
def test_estimates_scale_with_n_and_trials():
    from privsim.protocols import RandomizedResponse
    from privsim.resources import TRIAL_BYTES, estimate_run, floor_estimate

    rr = RandomizedResponse()
    small, big = estimate_run(rr, 20_000, None, 100), estimate_run(rr, 40_000, None, 100)
    base = estimate_run(rr, 1, None, 100).memory
    assert (big.memory - base) / (small.memory - base) == pytest.approx(2.0, rel=0.05)  # linear in n
    many = estimate_run(rr, 100, None, 10**7)
    assert many.memory - estimate_run(rr, 100, None, 10**6).memory >= 9 * 10**6 * TRIAL_BYTES
    # the floor is below the estimate of a protocol at the floor's shape, per party (leaky-rr) and in cohorts (rr)
    from privsim.protocols.leaky import LeakyRR

    assert floor_estimate(10**9, 10).memory > 4 * 2**40 and floor_estimate(10**9, 10).memory <= \
        estimate_run(LeakyRR(), 10**5, None, 10).memory * 10**4 * 1.01
    assert floor_estimate(10**9, 10, cohorts=True).memory <= estimate_run(rr, 10**5, None, 10).memory * 10**4 * 1.01


def test_a_protocols_own_cost_per_value_enters_the_time_estimate():
    from privsim.protocols.secagg import SecAgg
    from privsim.resources import VALUE_SECONDS, estimate_run

    class Cheap(SecAgg):  # the same runs, with the engine's average cost per value
        seconds_per_value = None

    n, trials = 32, 100
    dear, cheap = estimate_run(SecAgg(), n, None, trials), estimate_run(Cheap(), n, None, trials)
    messages = SecAgg().schedule(n, SecAgg().default_t(n)).messages
    assert dear.memory == cheap.memory
    assert dear.seconds - cheap.seconds == pytest.approx(messages * trials * (SecAgg.seconds_per_value - VALUE_SECONDS))


def test_long_runs_are_announced(capsys, monkeypatch):
    import privsim.resources as res

    monkeypatch.setattr(res, "START_SECONDS", 3600.0)
    code, out, err = cli(capsys, *P, "--json")
    assert code == 0 and json.loads(out)["trials"] == 10
    assert re.search(r"privsim: this will take about 1\.0 h \(estimated", err)


def test_max_memory_overrides_and_is_checked(capsys):
    code, _, err = cli(capsys, *P, "--max-memory", "1M")
    assert code == 2 and "above the 1.0 MiB --max-memory" in err
    code, _, err = cli(capsys, *P, "--max-memory", "lots")
    assert code == 2 and "max-memory must be a size" in err


# ------------------------------------------------------------------ progress, help, output
def test_progress_counts_trials_to_100_percent_in_80_columns(capsys):
    code, _, err = cli(capsys, "run", "--protocol", "randomized-response", "--n", 4096, "--trials", 3000,
                       "--progress", "--json")
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err).replace("\r", "\n")
    lines = [ln for ln in plain.splitlines() if ln.strip()]
    assert code == 0 and lines and max(len(ln) for ln in lines) <= 80
    assert "100%" in lines[-1] and "3000/3000 trials" in lines[-1]
    code, _, err = cli(capsys, *P, "--no-progress", "--json")
    assert err == ""


def test_version_and_defaults_shown(capsys):
    code, out, _ = cli(capsys, "--version")
    assert code == 0 and out.strip() == f"privsim {privsim.__version__}"
    import typer

    from privsim.cli import app

    group = typer.main.get_command(app)
    for name, cmd in group.commands.items():
        ctx = typer.main.get_command(app).make_context("privsim", [], resilient_parsing=True)
        ctx = type(ctx)(cmd, info_name=f"privsim {name}", terminal_width=1000, max_content_width=1000)
        options = [ln for ln in cmd.get_help(ctx).splitlines() if ln.startswith("  --") and "--help" not in ln]
        assert options and all("[default: " in ln or "[required]" in ln for ln in options), (name, options)
    code, out, _ = cli(capsys, "run", "--help")
    assert "privsim protocols NAME" in out


def test_protocols_listing_at_80_columns(capsys):
    code, out, _ = cli(capsys, "protocols")
    assert code == 0 and max(map(len, out.splitlines())) <= 80 and "secure-sum" in out
    code, out, _ = cli(capsys, "protocols", "continual-sum")
    assert code == 0 and max(map(len, out.splitlines())) <= 80
    assert "int, a power of two in [2, 2^16]; default 64" in out
    code, out, _ = cli(capsys, "protocols", "continual-sum", "--json")
    assert json.loads(out)["T"]["allowed"] == "int, a power of two in [2, 2^16]"
    code, _, err = cli(capsys, "protocols", "nope")
    assert code == 2 and "unknown protocol 'nope'" in err


def test_json_is_strict(capsys):
    from privsim.cli_support import print_json

    def refuse(name):
        raise AssertionError(f"bare {name} in the JSON")

    print_json({"x": float("nan"), "y": [np.float64("inf"), np.int64(3)]})
    assert json.loads(capsys.readouterr().out, parse_constant=refuse) == {"x": None, "y": [None, 3]}
    code, out, _ = cli(capsys, *P, "--json")
    d = json.loads(out, parse_constant=refuse)
    assert code == 0 and isinstance(d["messages"], int) and isinstance(d["trials"], int)


# ------------------------------------------------------------------ plots
def test_rr_histogram_is_binned_on_the_lattice_and_theory_matches():
    from privsim.analysis.plots import lattice_bins
    from privsim.cli import _theory_sd
    from privsim.protocols import RandomizedResponse

    rr = RandomizedResponse(epsilon=1.0)
    res = run_trials(rr, [1] * 50 + [0] * 50, trials=4000, seed=3)
    edges = lattice_bins(res.estimate)
    step = 1 / (2 * rr.a)  # the estimate moves by 1/(2a) per flipped bit
    width = float(np.diff(edges)[0])
    assert np.allclose(np.diff(edges), width) and width / step == pytest.approx(round(width / step))
    centres = (res.estimate - edges[0]) / width
    per_bin = round(width / step)
    assert per_bin > 1 or np.allclose(centres % 1, 0.5)  # each value in the middle of its bin
    sd = _theory_sd(rr, 100, 99)
    # the curve's sd is the estimator's: within 5 sigma of the sample's (sd of an sd ~ sd/sqrt(2R))
    assert abs(np.std(res.estimate, ddof=1) - sd) < 5 * sd / np.sqrt(2 * 4000)


def test_lower_bounds_are_rounded_down(capsys, tmp_path):
    from privsim.analysis.plots import floor_text

    assert floor_text(0.6999999) == "0.699" and floor_text(6.2449, 2) == "6.24"
    png = tmp_path / "a.svg"
    code, out, _ = cli(capsys, "audit", "--protocol", "randomized-response", "--n", 4, "--coalition", "C",
                       "--neighbor", 1, "--trials", 20_000, "--seed", 1, "--plot", png, "--json")
    d = json.loads(out)
    assert code == 0 and png.stat().st_size > 1000 and "<svg" in png.read_text()[:500]
    code, out, _ = cli(capsys, "audit", "--protocol", "randomized-response", "--n", 4, "--coalition", "C",
                       "--neighbor", 1, "--trials", 20_000, "--seed", 1)
    shown = float(re.search(r"epsilon_lower\s*│\s*([0-9.]+)", out).group(1))
    assert shown <= d["epsilon_lower"] and d["epsilon_lower"] - shown < 1e-6
