"""Start-up of a TCP party process (issue 29): it imports what a party needs, not scipy.stats,
networkx or the continual-release machinery; and it takes secure sum's modulus from the peers
file rather than importing scipy.special for the noise's tail bound, and finds its neighbours
without networkx."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from privsim import ParameterError, mechanisms
from privsim.network.schedule import sort_ids
from privsim.protocols import get_protocol
from privsim.transport import PeersConfig

HEAVY = ("scipy.stats", "scipy.optimize", "networkx", "privsim.mechanisms.blt", "privsim.mechanisms.tree",
         "privsim.mechanisms.sketch", "asyncio")  # (asyncio: about 0.1 s; a trio run never needs it)

PARTY = """
import json, sys
import privsim.transport.party
from privsim.protocols.secure_sum import SecureSum
SecureSum(noise="laplace", epsilon=1.0).modulus_for(16, 1)
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def test_a_secure_sum_party_does_not_import_what_it_does_not_need() -> None:
    out = subprocess.run([sys.executable, "-c", PARTY.format(heavy=HEAVY)], capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout) == []


# What party.main and party._run do before the first round (the listening socket and the links aside).
BEFORE_FIRST_ROUND = """
import json, sys
from privsim.parties.rng import StreamSeeder, block_range
from privsim.protocols.inputs import prepare_inputs
from privsim.transport.party import _check_run
from privsim.transport.peers import load_peers
cfg = load_peers(sys.argv[1])
_check_run(cfg, None)
protocol = cfg.build()
protocol.check_setting(cfg.n, cfg.t)
schedule = protocol.cached_schedule(cfg.n, cfg.t)
neighbours = [schedule.neighbours(p) for p in sorted(cfg.addresses)]  # (open_links)
prepare_inputs(protocol, cfg.inputs, cfg.trials, cfg.n)
StreamSeeder(cfg.seed, cfg.n, block_range(cfg.trials, cfg.block_offset))
print(json.dumps({"modulus": protocol.modulus_for(cfg.n, cfg.t), "neighbours": neighbours,
                  "heavy": sorted(m for m in sys.modules if m.split(".")[0] in ("scipy", "networkx", "asyncio")
                                 or m == "importlib.metadata")[:3]}))  # (plugins only; ~0.1 s)
"""


@pytest.mark.parametrize("params", [{}, {"noise": "discrete-laplace", "epsilon": 0.5}, {"modulus": 1 << 30}],
                         ids=["laplace", "discrete-laplace", "given-modulus"])
def test_a_party_process_takes_the_modulus_from_the_peers_file_and_imports_no_scipy_or_networkx(tmp_path, params):
    proto = get_protocol("secure-sum", **params)
    cfg = PeersConfig.create(proto, np.arange(5) % 2, t=2, trials=2, seed=3,
                             addresses={p: ("127.0.0.1", 4000 + p) for p in range(5)})
    peers = cfg.write(tmp_path / "peers.json")
    assert cfg.precomputed == {"modulus": proto.modulus_for(5, 2)}
    assert PeersConfig.from_json(cfg.to_json()).precomputed == cfg.precomputed
    out = subprocess.run([sys.executable, "-c", BEFORE_FIRST_ROUND, str(peers)], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    graph = proto.schedule(5, 2).graph()
    neighbours = [sorted(graph.neighbors(p)) for p in range(5)]
    assert json.loads(out.stdout) == {"modulus": proto.modulus_for(5, 2), "neighbours": neighbours, "heavy": []}


@pytest.mark.parametrize("name, n, t", [("secure-sum", 6, 2), ("secagg-plus", 12, 2), ("ck-sum", 9, 3),
                                        ("randomized-response-distributed", 5, 4), ("shuffle-sum", 6, 0)])
def test_neighbours_read_off_the_rounds_are_the_graphs(name: str, n: int, t: int) -> None:
    proto = get_protocol(name)
    fresh, built = proto.schedule(n, t), proto.schedule(n, t)
    built.graph()  # the graph exists: neighbours asks it
    for p in sort_ids(built.graph().nodes):
        assert fresh.neighbours(p) == built.neighbours(p) == sort_ids(built.graph().neighbors(p)), p
    assert "_graph" not in fresh.__dict__
    with pytest.raises(ParameterError, match="party 99 does not exist"):
        fresh.neighbours(99)


@pytest.mark.parametrize("name", ["FastGaMe", "laplace_tail_bound", "share", "analytic_gaussian_sigma"])
def test_the_mechanisms_names_still_load_on_first_use(name: str) -> None:
    assert name in mechanisms.__all__ and name in dir(mechanisms)
    assert getattr(mechanisms, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        mechanisms.nothing  # noqa: B018
