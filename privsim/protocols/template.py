"""``privsim new-protocol NAME``: a commented, runnable protocol file and a scenario using it."""

from __future__ import annotations

import re
from pathlib import Path

from privsim.errors import ParameterError

__all__ = ["protocol_template", "scenario_template", "write_template"]

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")

_PROTOCOL = '''"""{title}: every party sends its bit plus Laplace noise to the curator, who adds them up.

Written by `privsim new-protocol {name}`. Try it:

    privsim run {stem}.toml
    privsim views {stem}.toml --coalition C
    privsim audit {stem}.toml --coalition C --neighbor 0
    privsim bounds {stem}.toml
"""

import numpy as np

from privsim import CURATOR, Param, Privacy, Protocol, Schedule


class {cls}(Protocol):
    """Each party i sends x_i + Lap(1/epsilon) to the curator C, who outputs the sum."""

    name = "{name}"  # the name shown by `privsim run`; --protocol {stem}.py:{cls} loads the class
    has_curator = True  # a curator "C" (with no input) takes part
    input_values = (0, 1)  # the allowed inputs (None: any number)
    epsilon = Param(1.0, gt=0, doc="privacy of each party's message")  # --param epsilon=0.5

    def schedule(self, n, t):
        """Every message of a run, from the parameters alone: a list of rounds of (sender, receiver)."""
        return Schedule(n, [[(i, CURATOR) for i in range(n)]], curator=True)

    async def party(self, ctx):
        """Party ctx.id. Every value carries a leading trial axis: ctx.input has shape (trials,)."""
        noise = ctx.rng.laplace(0.0, 1.0 / self.epsilon)  # (trials,): one draw per trial
        ctx.send(CURATOR, ctx.input + noise)
        # A party calls end_round() once per round, also in a round where it sends nothing
        # (`await ctx.idle(k)` sits out k rounds); messages go out when the round ends.
        await ctx.end_round()

    async def curator(self, ctx):
        inbox = await ctx.end_round()  # sender -> value, for this round
        ctx.output(inbox.total())  # each party outputs at most once, with the trial axis

    # true_value(inputs) defaults to the sum of the inputs of each trial; override it for
    # anything else. estimate() turns the outputs into one number per trial.
    def estimate(self, outputs, n, t):
        return np.asarray(outputs[CURATOR], dtype=float)

    def privacy(self, coalition, n, t):
        """The claim the audit checks: a Privacy(epsilon, delta), or None for no claim."""
        return Privacy(self.epsilon)  # each message is epsilon-DP on its own, whoever colludes
'''

_SCENARIO = '''# Written by `privsim new-protocol {name}`: run it with `privsim run {stem}.toml`.
protocol = "{stem}.py:{cls}"  # a path relative to this file
n = 20
trials = 2000
seed = 1
inputs = "half"
coalition = "C"  # for `privsim audit {stem}.toml`
neighbor = 0

[params]
epsilon = 1.0
'''


def _names(name: str) -> tuple[str, str]:
    if not _NAME.fullmatch(name):
        raise ParameterError(f"new-protocol: NAME must be lowercase letters, digits and - or _, starting with a "
                             f"letter (got {name!r})")
    stem = name.replace("-", "_")
    return stem, "".join(part.capitalize() for part in stem.split("_"))


def protocol_template(name: str) -> str:
    """The protocol file for ``name`` (e.g. ``relay-sum``: class ``RelaySum`` in ``relay_sum.py``).

    >>> "class RelaySum(Protocol):" in protocol_template("relay-sum")
    True
    """
    stem, cls = _names(name)
    return _PROTOCOL.format(name=name, stem=stem, cls=cls, title=cls)


def scenario_template(name: str) -> str:
    """The scenario file running the protocol of :func:`protocol_template`.

    >>> 'protocol = "relay_sum.py:RelaySum"' in scenario_template("relay-sum")
    True
    """
    stem, cls = _names(name)
    return _SCENARIO.format(name=name, stem=stem, cls=cls)


def write_template(name: str, folder: str | Path = ".", force: bool = False) -> tuple[Path, Path]:
    """Write ``NAME.py`` and ``NAME.toml`` (``-`` becomes ``_``) into ``folder``; returns their paths.

    Raises
    ------
    ParameterError
        ``name`` is not a valid name, is a built-in protocol's, or a file exists (without ``force``).

    Examples
    --------
    >>> import tempfile
    >>> py, toml = write_template("coin-sum", tempfile.mkdtemp())
    >>> py.name, toml.name
    ('coin_sum.py', 'coin_sum.toml')
    """
    from privsim.protocols import _BUILTIN

    stem, _ = _names(name)
    if name in _BUILTIN:
        raise ParameterError(f"new-protocol: {name!r} is a built-in protocol's name (expected a name of its own)")
    folder = Path(folder)
    paths = (folder / f"{stem}.py", folder / f"{stem}.toml")
    existing = [str(p) for p in paths if p.exists()]
    if existing and not force:
        raise ParameterError(f"new-protocol: {existing[0]} exists (expected a new file; --force overwrites)")
    if folder.exists() and not folder.is_dir():
        raise ParameterError(f"new-protocol: --dir {folder} is a file (expected a folder to write into)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        texts = (protocol_template(name), scenario_template(name))
        for path, text in zip(paths, texts):
            path.write_text(text)
    except OSError as exc:
        for path in paths:  # nothing half-written
            if not existing and path.exists():
                path.unlink()
        raise ParameterError(f"new-protocol: cannot write into --dir {folder} ({exc.strerror}; expected a "
                             "writable folder)") from None
    return paths
