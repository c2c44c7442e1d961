"""The same protocol, for real: every party its own OS process, talking TCP.

- :class:`Transport`, the interface the engine is handed, is :mod:`privsim.plan`'s (a plan names its transport);
- :mod:`~privsim.transport.local`: every party a task of this process (the default);
- :mod:`~privsim.transport.framing`: frames (header, value without pickle, HMAC tag);
- :mod:`~privsim.transport.peers`: the peers file a party process starts from;
- :mod:`~privsim.transport.link`: one authenticated connection (handshake, checked frames);
- :mod:`~privsim.transport.endpoint`: one party's network (what PartyContext calls);
- :mod:`~privsim.transport.party`: one party process (``privsim party``);
- :mod:`~privsim.transport.launcher`: every party of a run as processes on this host
  (``simulate(..., transport="tcp")``).

See docs/architecture.md, "Runtimes", for the wire format, the handshake and what the
authentication does and does not protect.
"""

from __future__ import annotations

from privsim.plan import Transport, TransportRun, resolve_transport
from privsim.transport.launcher import TcpRun, TcpTransport
from privsim.transport.local import LocalTransport
from privsim.transport.party import PartyReport, run_party
from privsim.transport.peers import DEFAULT_TIMEOUT, PeersConfig, load_peers

__all__ = ["DEFAULT_TIMEOUT", "LocalTransport", "PartyReport", "PeersConfig", "TcpRun", "TcpTransport", "Transport",
           "TransportRun", "load_peers", "resolve_transport", "run_party"]
