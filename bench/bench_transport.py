"""Transport benchmark (issue 17): secure-sum with every party its own process over TCP,
beside MPyC's secure sum of one bit per party, at n = 4, 8, 16, 32, 64 on this machine.

privsim: ``SecureSum`` (Laplace noise, epsilon = 1) with t = (n - 1) // 2, MPyC's default
threshold, one trial; wall time of the whole run (processes forked, connections made,
protocol run, processes reaped), protocol time (last party connected to last party
done) and its share per round, messages, the simulator's bits and the bytes on the wire.
At the smallest n the run is repeated with freshly spawned interpreters
(``TcpTransport(start="spawn")``), which is how MPyC starts its parties; its CPU per party
(the parties' whole runs, from this process's ``RUSAGE_CHILDREN``) is the start-up cost
(an interpreter, numpy, trio and privsim's party modules: read from Python's bytecode
cache, or compiled from source every time where ``PYTHONDONTWRITEBYTECODE`` is set).

MPyC: ``python SCRIPT -M n --no-prss`` (party 0 spawns the others), each party inputs one
secure bit, ``mpc.sum`` and ``mpc.output``; wall time of the whole run and protocol time
(after ``mpc.start()`` to the output). MPyC is reported as unavailable when it is not
installed (``pip install mpyc`` in a benchmark environment only; privsim does not
depend on it). Run: ``python bench/bench_transport.py`` (prints JSON).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from privsim.protocols import get_protocol
from privsim.transport import TcpTransport

NS = (4, 8, 16, 32, 64)
#: Seconds any one run may take before it is reported as failed (never hangs the suite).
RUN_LIMIT = 300.0
MPYC_LIMIT = 240.0

MPYC_SCRIPT = """
import json, sys, time
from mpyc.runtime import mpc
async def main():
    await mpc.start()
    t0 = time.perf_counter()
    secint = mpc.SecInt(16)
    bits = mpc.input(secint(mpc.pid % 2))
    total = await mpc.output(mpc.sum(bits))
    t1 = time.perf_counter()
    await mpc.shutdown()
    if mpc.pid == 0:
        print(json.dumps({"sum": int(total), "protocol_s": t1 - t0}))
mpc.run(main())
"""


def privsim_secure_sum(n: int, start: str = "fork") -> dict[str, Any]:
    """One secure-sum run with n party processes (alternating input bits, as MPyC's below)."""
    proto = get_protocol("secure-sum")
    t = (n - 1) // 2
    x = np.arange(n) % 2
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # the parties are this process's children
    run = TcpTransport(timeout=RUN_LIMIT, start=start).run(proto, x, t=t, trials=1, seed=1, record=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    party_cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / n
    rounds = max(run.rounds, 1)
    return {"wall_s": run.wall_s, "protocol_s": run.protocol_s, "ms_per_round": 1e3 * run.protocol_s / rounds,
            "cpu_per_party_s": party_cpu,
            "rounds": run.rounds, "messages": run.messages, "bits": run.bits, "wire_bytes": run.wire_bytes}


def mpyc_secure_sum(n: int) -> dict[str, Any]:
    """MPyC's secure sum of one bit per party with n local processes, or why it could not run.

    MPyC's parties listen on ``base port + i``; a port below the OS's ephemeral range is
    chosen (an outgoing connection of a party started earlier could otherwise hold the
    port of one started later), and a failed run is retried once on another port.
    """
    if importlib.util.find_spec("mpyc") is None:
        return {"available": False, "reason": "mpyc is not installed (pip install mpyc)"}
    row: dict[str, Any] = {}
    for _ in range(2):
        row = _mpyc_once(n, random.Random().randrange(20000, 32000 - n))
        if "error" not in row:
            break
    return row


def _mpyc_once(n: int, port: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:  # MPyC restarts its own script file for parties 1..n-1
        script = Path(tmp) / "mpyc_sum.py"
        script.write_text(MPYC_SCRIPT)
        t0 = time.perf_counter()
        # Its own process group: party 0 starts the others, and all go if the run is stopped.
        proc = subprocess.Popen([sys.executable, str(script), "-M", str(n), "--base-port", str(port), "--no-prss"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=MPYC_LIMIT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"available": True, "error": f"no result within {MPYC_LIMIT:g} s (port {port})"}
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # parties that outlive party 0
        wall = time.perf_counter() - t0
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        return {"available": True, "error": (stderr.strip().splitlines() or ["no output"])[-1]}
    got = json.loads(lines[-1])
    return {"available": True, "wall_s": wall, "protocol_s": got["protocol_s"], "sum_ok": got["sum"] == n // 2}


def main() -> dict[str, Any]:
    """Run the transport benchmark; returns named figures per n."""
    out: dict[str, Any] = {}
    for n in NS:
        row = privsim_secure_sum(n)
        out.update({f"privsim_n{n}_{k}": v for k, v in row.items()})
        out.update({f"mpyc_n{n}_{k}": v for k, v in mpyc_secure_sum(n).items()})
    spawned = privsim_secure_sum(NS[0], start="spawn")
    out[f"privsim_n{NS[0]}_spawn_wall_s"] = spawned["wall_s"]
    out[f"privsim_n{NS[0]}_spawn_protocol_s"] = spawned["protocol_s"]
    out[f"privsim_n{NS[0]}_spawn_cpu_per_party_s"] = spawned["cpu_per_party_s"]
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
