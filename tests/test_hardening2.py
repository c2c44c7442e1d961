"""Issue 27: hostile inputs get one line naming the problem (exit 2), refusals before any work,
the JSON channel kept clean, files written as a user expects."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_cli import cli  # (code, stdout, stderr) of one privsim command, in this process

import privsim
from privsim.errors import ParameterError, ProtocolWarning

ROOT = Path(__file__).resolve().parent.parent
HEADLINE = str(ROOT / "scenarios" / "headline.toml")
DEEP = "[" * 5000 + "]" * 5000

PROTOCOL_FILE = '''
import numpy as np
from privsim import Protocol, Schedule
{head}

class Tally(Protocol):
    name = "tally-27"
    has_curator = True

    def schedule(self, n, t):
        return Schedule.star_to(n)

    async def party(self, ctx):
        {party}
        ctx.send("C", ctx.input)
        {end}

    async def curator(self, ctx):
        ctx.output((await ctx.end_round()).total())

    def estimate(self, outputs, n, t):
        return outputs["C"]
'''


def protocol_file(folder: Path, name: str = "tally27.py", head: str = "", party: str = "pass",
                  end: str = "await ctx.end_round()") -> str:
    path = folder / name
    path.write_text(PROTOCOL_FILE.format(head=head, party=party, end=end))
    return f"{path}:Tally"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "deep.toml").write_text(f'protocol = "randomized-response"\nn = 4\nx = {DEEP}\n')
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "ctrl_c.py").write_text("raise KeyboardInterrupt\n")
    (tmp_path / "a_file").write_text("x")
    protocol_file(tmp_path, "trio27.py", head="import trio", party="await trio.sleep(0)")
    return tmp_path


RR = ["run", "--protocol", "randomized-response", "--n", "4", "--trials", "10"]
AUDIT_RR = ["--protocol", "randomized-response", "--n", "4", "--coalition", "C", "--neighbor", "1", "--trials"]
# One row per case of the issue: the command ({tmp}: a folder with the files above) and what
# the one line must say.
ROWS = [
    (["run", "--protocol", "/etc/hostname:Foo", "--n", "4"], "/etc/hostname is not a Python file"),
    (["run", "--protocol", "{tmp}/exits.py:Foo", "--n", "4"], "it called sys.exit(3) (line 2)"),
    (["run", "--protocol", "{tmp}/ctrl_c.py:Foo", "--n", "4"], "ctrl_c.py failed to import: KeyboardInterrupt"),
    (["run", "{tmp}/deep.toml"], "arrays nested too deeply"),
    ([*RR, "--inputs", DEEP], "inputs: the list is nested too deeply"),
    (["views", HEADLINE, "--coalition", "0"], "the headline scenario compares many protocols"),
    (["audit", HEADLINE], "the headline scenario compares many protocols"),
    (["bounds", HEADLINE], "the headline scenario compares many protocols"),
    (["new-protocol", "coin-27", "--dir", "{tmp}/a_file"], "--dir {tmp}/a_file is a file"),
    (["new-protocol", "coin-27", "--dir", "/proc"], "cannot write into --dir /proc"),
    ([*RR, "--executor", "dask", "--workers", "100000"], "workers must be <= 4 per core"),
    (["run", "--protocol", "secure-sum", "--n", "2", "--inputs", "[1e308, 1]"], "1e+308 at index (0,) does not fit"),
    (["run", "--protocol", "{tmp}/trio27.py:Tally", "--n", "4", "--backend", "asyncio"],
     "the party awaited a trio primitive under the asyncio backend: use --backend trio"),
    ([*RR, "--param", "epsilon=1e-320"], "epsilon = 1e-320 is too small to compute with"),
    (["run", "--protocol", "secure-sum", "--n", "2", "--inputs", "[5, 1]"], "party 0 has 5, outside"),
    (["run", "--protocol", "secure-sum", "--n", "4", "--param", "noise=gaussian", "--param", "rho=0.5",
      "--param", "epsilon=3"], "rho, epsilon: give one (rho = 0.5 calibrates the noise, so epsilon = 3.0"),
    (["run", "--protocol", "central-gaussian", "--n", "4", "--param", "rho=0.5", "--param", "epsilon=3"],
     "set rho = 0 to calibrate to (epsilon, delta)"),
    # 3 * 10^6 batches per input: the estimation's picks (about 0.45 GiB) were left out of the estimate (199.5 MiB)
    (["audit", *AUDIT_RR, "100000000000", "--max-memory", "512M"],
     "this run needs about 623.2 MiB of memory (estimated), above the 512.0 MiB"),
    # 3 * 10^7 batches per input: refused at once (the plan's batches are computed, not stored) ...
    (["audit", *AUDIT_RR, "1000000000000", "--max-memory", "1G"], "this run needs about 4.7 GiB of memory"),
    # ... and, where that memory is there, because it would run for six weeks
    (["audit", *AUDIT_RR, "1000000000000", "--max-memory", "1T"],
     "this run would take about 41.4 days (estimated), above --max-time (1.0 days); lower n or trials, or raise "
     "--max-time"),
    ([*RR, "--max-time", "soon"], "max-time must be a duration like 90s, 30m, 24h or 7d (got 'soon')"),
    ([*RR, "--trials", "10000000", "--max-time", "1s"], "would take about 3 s (estimated), above --max-time (1 s)"),
    # a leading "ulimit -n N" runs the command under that limit of open files
    (["ulimit", "-n", "256", "run", "--protocol", "secure-sum", "--n", "400", "--transport", "tcp", "--trials", "2"],
     "ulimit -n: a TCP run of 400 parties needs about 4"),
]


@pytest.mark.parametrize("args, field", ROWS, ids=[f"{i}:{' '.join(a)[:40]}" for i, (a, _) in enumerate(ROWS)])
def test_every_row_one_line_exit_2(capsys, files, args, field):
    import resource

    limit = resource.getrlimit(resource.RLIMIT_NOFILE)
    if args[:2] == ["ulimit", "-n"]:
        resource.setrlimit(resource.RLIMIT_NOFILE, (int(args[2]), limit[1]))
        args = args[3:]
    try:
        code, out, err = cli(capsys, *[a.replace("{tmp}", str(files)) for a in args])
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, limit)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "np." not in err
    assert field.replace("{tmp}", str(files)) in err, err
    assert not list(files.glob("coin_27*"))  # nothing half-written


@pytest.mark.parametrize("json_out", [True, False])
def test_a_full_device_is_one_line(json_out):
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "privsim", *RR, *(["--json"] if json_out else [])], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == ["error: output: writing failed (No space left on device); free some "
                                             "space or write elsewhere"]


def test_param_defaults_are_checked_when_the_class_is_defined():
    with pytest.raises(ParameterError, match=r"Bad\.epsilon: its default is not allowed: epsilon must be > 0"):
        class Bad(privsim.Protocol):
            epsilon = privsim.Param(-1.0, gt=0)


def test_a_protocol_file_imports_the_module_beside_it(tmp_path, capsys):
    (tmp_path / "helper27.py").write_text("def count(inbox):\n    return inbox.total()\n")
    ref = protocol_file(tmp_path, head="import helper27")
    code, out, err = cli(capsys, "run", "--protocol", ref, "--n", 3, "--trials", 5, "--json")
    assert code == 0 and json.loads(out)["estimate_mean"] == 1.0, err
    import cloudpickle

    # Workers receive the helper by value: they need not see the folder.
    assert cloudpickle.cloudpickle._is_registered_pickle_by_value(sys.modules["helper27"])


def test_a_partys_print_stays_off_the_json_channel(tmp_path):
    ref = protocol_file(tmp_path, party='print("hello from", ctx.id)')
    p = subprocess.run([sys.executable, "-m", "privsim", "run", "--protocol", ref, "--n", "3", "--trials", "5",
                        "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and json.loads(p.stdout)["trials"] == 5
    assert "hello from 0" in p.stderr


def test_object_messages_are_refused_in_process_as_over_tcp(tmp_path, capsys):
    ref = protocol_file(tmp_path, party="ctx.send('C', np.empty(ctx.trials, dtype=object)); return")
    code, _, err = cli(capsys, "run", "--protocol", ref, "--n", 2, "--trials", 5)
    assert code == 2 and "message to the curator has dtype object (expected a numeric or boolean array" in err


def test_end_round_past_the_schedule_or_never_warns(tmp_path):
    from privsim.protocols.loading import load_reference

    twice = load_reference(protocol_file(tmp_path, "twice27.py", end="await ctx.end_round(); await ctx.end_round()"))
    never = load_reference(protocol_file(tmp_path, "never27.py", end=""))
    for cls, says in ((twice, "called end_round() for round 2, after the schedule's last round (1)"),
                      (never, "returned without calling end_round()")):
        with pytest.warns(ProtocolWarning, match=re.escape(says)):
            res = privsim.simulate(cls(), [1, 0, 1], trials=3)
        assert res.estimate.tolist() == [2, 2, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProtocolWarning)  # built-ins give none (secure sum at t = 0 too)
        privsim.simulate(privsim.protocols.get_protocol("secure-sum"), [1, 0, 1], t=0, trials=3)


def test_plots_get_the_umasks_mode(tmp_path, capsys):
    old = os.umask(0o022)
    try:
        code, _, _ = cli(capsys, *RR, "--plot", tmp_path / "x.svg")
    finally:
        os.umask(old)
    assert code == 0 and stat.S_IMODE((tmp_path / "x.svg").stat().st_mode) == 0o644


def test_party_command_refuses_before_running(tmp_path, capsys):
    from privsim.cli import main
    from privsim.protocols import get_protocol
    from privsim.transport.peers import PeersConfig

    cfg = PeersConfig.create(get_protocol("randomized-response-distributed"), np.array([1, 0]), t=1, trials=2,
                             seed=5, addresses={0: ("127.0.0.1", 1), 1: ("127.0.0.1", 2)})
    peers = cfg.write(tmp_path / "peers.json")

    def party(*extra):
        with pytest.raises(SystemExit) as info:
            main(["party", "--id", "0", "--peers", str(peers), *extra])
        return info.value.code, capsys.readouterr().err.strip().splitlines()

    assert party("--result", "/nonexistent/dir/x") == (2, ["error: --result: folder '/nonexistent/dir' does not exist"])
    data = json.loads(peers.read_text())
    peers.write_text(json.dumps({**data, "trials": 10**15}))
    code, lines = party()
    assert code == 2 and len(lines) == 1 and "n, trials: this run needs about" in lines[0]
    peers.write_text(json.dumps(data))
    peers.chmod(0o644)
    assert party() == (2, [f"error: {peers}: the peers file holds the run's key but is readable by others (mode "
                           f"644); run chmod 600 {peers}"])


def test_a_protocol_from_a_file_travels_to_a_party_by_its_path(tmp_path):
    from privsim.protocols.loading import load_reference
    from privsim.transport.peers import build_protocol, protocol_spec

    cls = load_reference(protocol_file(tmp_path))
    spec = protocol_spec(cls())
    assert spec == f"{tmp_path / 'tally27.py'}:Tally" and type(build_protocol(spec, {})) is cls


def test_bench_tables_print_plain_numbers():
    from privsim.cli_support import value_text

    assert value_text({"ratio": np.float64(2.5), "runs": [np.int64(3), np.float64(0.25)]}) == \
        "{ratio: 2.5, runs: [3, 0.25]}"


def _listening(port: int) -> bool:
    # the kernel's own table of sockets (state 0A is LISTEN): the party is waiting for its peers
    with open("/proc/net/tcp") as fh:
        return any(f":{port:04X} " in ln and ln.split()[3] == "0A" for ln in fh.readlines()[1:])


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# One row per signal to a `privsim party` waiting for a peer that never starts: the exit code.
SIGNAL_ROWS = [("SIGINT", 130), ("SIGTERM", 143)]


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads the kernel's socket table")
@pytest.mark.parametrize("sig, exit_code", SIGNAL_ROWS)
def test_a_signal_to_a_waiting_party_is_one_line(tmp_path, sig, exit_code):
    import signal
    import time

    from privsim.protocols import get_protocol
    from privsim.transport.peers import PeersConfig

    port = _free_port()
    cfg = PeersConfig.create(get_protocol("randomized-response-distributed"), np.array([1, 0]), t=1, trials=2,
                             seed=5, addresses={0: ("127.0.0.1", port), 1: ("127.0.0.1", _free_port())})
    peers = cfg.write(tmp_path / "peers.json")
    proc = subprocess.Popen([sys.executable, "-m", "privsim", "party", "--id", "0", "--peers", str(peers)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not _listening(port):  # its own signal that it waits (party 1, the larger id, would connect)
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)  # a poll interval, not a synchronization
        proc.send_signal(getattr(signal, sig))
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out, err.splitlines()) == (exit_code, "", ["interrupted"])


def test_a_dask_run_leaves_nothing_in_tmpdir(tmp_path):
    # Dask's workers would leave dask-scratch-space in TMPDIR: theirs is a folder of ours, removed
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONWARNINGS": "ignore"}
    p = subprocess.run([sys.executable, "-m", "privsim", *RR, "--executor", "dask", "--workers", "1", "--json"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0 and json.loads(p.stdout)["executor"] == "dask", p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == []
