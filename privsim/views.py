"""Coalition views (Definition 2.4 of Beimel–Nissim–Omri): what a coalition of curious parties sees.

The view of a coalition T holds the members' inputs, their random seeds and every random
value they drew, every message sent to or by a member, and the members' outputs. It
never holds a message between two non-members. :meth:`View.to_array` flattens it to a
(trials x features) float array with named columns, the input of the audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privsim.protocols.columns import Column

__all__ = ["Column", "View", "flatten_value"]


def flatten_value(value: Any, trials: int) -> np.ndarray:
    """A message/output/input value as a ``(trials, k)`` float array.

    Arrays with the leading trial axis are reshaped; anything else is the same in every
    trial and is broadcast.

    >>> flatten_value(np.array([[1, 2], [3, 4]]), 2).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    >>> flatten_value(5, 3).tolist()
    [[5.0], [5.0], [5.0]]
    """
    if isinstance(value, (tuple, list)):
        return np.concatenate([flatten_value(v, trials) for v in value], axis=1)
    arr = np.asarray(value)
    if arr.ndim and arr.shape[0] == trials:
        return arr.reshape(trials, -1).astype(np.float64, copy=False)
    return np.broadcast_to(arr.reshape(1, -1).astype(np.float64), (trials, max(arr.size, 1)))


@dataclass(frozen=True)
class View:
    """The view of a coalition over ``trials`` runs.

    Attributes
    ----------
    coalition:
        The member ids, in canonical order; ``("public",)`` for the outside observer,
        whose view holds only the published outputs.
    trials:
        Number of runs (the leading axis of every value).
    inputs:
        ``member -> input`` (``(trials, ...)``), for members with an input.
    seeds:
        ``member -> description of its random seed`` (root entropy, stream family,
        slot and blocks): enough to regenerate its random tape.
    randomness:
        ``member -> list of the arrays it drew``, in order (its random tape as used).
    messages:
        ``(round, sender, receiver, value)`` for every message sent to or by a member.
    outputs:
        ``member -> output``.

    Examples
    --------
    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> res = privsim.simulate(RandomizedResponse(epsilon=1.0), [0, 1, 1], trials=4, seed=1)
    >>> v = res.view("C")
    >>> v.to_array().shape, v.columns()[:3]
    ((4, 4), ['msg r1 0->C', 'msg r1 1->C', 'msg r1 2->C'])
    """

    coalition: tuple[int | str, ...]
    trials: int
    inputs: dict[int | str, Any]
    seeds: dict[int | str, dict[str, Any]]
    randomness: dict[int | str, list[np.ndarray]]
    messages: list[tuple[int, int | str, int | str, Any]]
    outputs: dict[int | str, Any]
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def _blocks(self) -> tuple[list[np.ndarray], list[str]]:
        if "blocks" not in self._cache:
            blocks: list[np.ndarray] = []
            names: list[str] = []

            def add(prefix: str, value: Any) -> None:
                b = flatten_value(value, self.trials)
                blocks.append(b)
                names.extend([prefix] if b.shape[1] == 1 else [f"{prefix}[{j}]" for j in range(b.shape[1])])

            for m in self.coalition:
                if m in self.inputs:
                    add(f"input {m}", self.inputs[m])
            for m in self.coalition:
                for k, draw in enumerate(self.randomness.get(m, [])):
                    add(f"rand {m}#{k}", draw)
            for r, s, d, v in self.messages:
                add(f"msg r{r} {s}->{d}", v)
            for m, value in self.outputs.items():  # in member order (the public view: published outputs)
                add(f"output {m}", value)
            self._cache["blocks"] = (blocks, names)
        return self._cache["blocks"]

    def to_array(self) -> np.ndarray:
        """The view as a ``(trials, features)`` float64 array; see :meth:`columns`.

        The array is column-major (Fortran order): each feature is written, and later
        read by the audit, as one contiguous run (twice as fast as scattering the
        features into rows)."""
        blocks, _ = self._blocks()
        out = np.empty((self.trials, sum(b.shape[1] for b in blocks)), order="F")
        return np.concatenate(blocks, axis=1, out=out) if blocks else out

    def columns(self) -> list[str]:
        """Names of the columns of :meth:`to_array`: ``input i``, ``rand i#k``,
        ``msg rR S->D`` (with ``[j]`` for multi-element values) and ``output i``."""
        return list(self._blocks()[1])

    def column_records(self) -> list[Column]:
        """The columns of :meth:`to_array` as :class:`Column` records (kind, round, sender,
        receiver, party, draw, element), in order; ``str(record)`` is the display name.

        >>> import privsim
        >>> from privsim.protocols import RandomizedResponse
        >>> v = privsim.simulate(RandomizedResponse(), [0, 1], trials=2, seed=1).view("C")
        >>> [(c.kind, c.round, c.sender) for c in v.column_records()]
        [('msg', 1, 0), ('msg', 1, 1), ('output', None, None)]
        """
        return [Column.parse(name) for name in self.columns()]

    def rows(self, trial: int = 0) -> list[tuple[int, int | str, int | str, Any]]:
        """The messages of one trial as ``(round, from, to, value)`` rows, for display."""
        return [(r, s, d, self.trial_value(v, trial)) for r, s, d, v in self.messages]

    def trial_value(self, value: Any, trial: int) -> Any:
        """One trial's part of a value with the trial axis (tuples part by part), as lists and numbers.

        >>> import privsim
        >>> from privsim.protocols import RandomizedResponse
        >>> v = privsim.simulate(RandomizedResponse(), [0, 1], trials=2, seed=1).view("C")
        >>> v.trial_value((np.array([1, 2]), 7), 1)
        [2, 7]
        """
        if isinstance(value, (tuple, list)):
            return [self.trial_value(e, trial) for e in value]
        arr = np.asarray(value)
        val = arr[trial] if (arr.ndim and arr.shape[0] == self.trials) else arr
        return val.tolist()

    def to_dict(self, trials: int = 3) -> dict[str, Any]:
        """A JSON-ready summary of the first ``trials`` runs."""
        pick = self.trial_value  # a tuple output (e.g. dist-alpha's): each part on its own
        return {
            "coalition": [str(m) for m in self.coalition],
            "seeds": {str(m): s for m, s in self.seeds.items()},
            "trials": [
                {
                    "trial": i,
                    "inputs": {str(m): pick(v, i) for m, v in self.inputs.items()},
                    "randomness": {str(m): [pick(d, i) for d in ds] for m, ds in self.randomness.items()},
                    "messages": [{"round": r, "from": str(s), "to": str(d), "value": pick(v, i)}
                                 for r, s, d, v in self.messages],
                    "outputs": {str(m): pick(v, i) for m, v in self.outputs.items()},
                }
                for i in range(min(trials, self.trials))
            ],
        }
