"""Start-up of a TCP party process (issue 29): it imports what a party needs, not scipy.stats,
networkx or the continual-release machinery."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from privsim import mechanisms

HEAVY = ("scipy.stats", "scipy.optimize", "networkx", "privsim.mechanisms.blt", "privsim.mechanisms.tree",
         "privsim.mechanisms.sketch")

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


@pytest.mark.parametrize("name", ["FastGaMe", "laplace_tail_bound", "share", "analytic_gaussian_sigma"])
def test_the_mechanisms_names_still_load_on_first_use(name: str) -> None:
    assert name in mechanisms.__all__ and name in dir(mechanisms)
    assert getattr(mechanisms, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        mechanisms.nothing  # noqa: B018
