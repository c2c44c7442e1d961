"""The columns of a coalition's view as records: kind, round, sender, receiver.

A view (:class:`privsim.View`) flattens to an array whose columns have display names
(``input 0``, ``rand 0#1``, ``msg r2 3->C``, ``output C``, with ``[j]`` for the elements
of multi-element values). :class:`Column` is the same
name as a record, so that a protocol's audit score (:class:`~privsim.protocols.base.AuditScoreContext`)
and any other reader pick columns by their fields rather than by parsing strings.
It lives with the protocols, below the engine, because protocols read it
(docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Column"]

_ID = r"[^\s#\[\]-]+"  # a party id: digits, or a name such as C
_COLUMN = re.compile(rf"(?:(?P<kind>input|output) (?P<party>{_ID})|rand (?P<rparty>{_ID})#(?P<draw>\d+)"
                     rf"|msg r(?P<round>\d+) (?P<sender>{_ID})->(?P<receiver>{_ID}))(?:\[(?P<element>\d+)\])?")


def _party(text: str | None) -> int | str | None:
    return None if text is None else int(text) if text.isdigit() else text


@dataclass(frozen=True)
class Column:
    """One column of :meth:`privsim.View.to_array` as a record; ``name`` is its display name.

    Attributes
    ----------
    kind:
        ``"input"``, ``"rand"``, ``"msg"`` or ``"output"``.
    round, sender, receiver:
        For messages: the round and the two ends (``None`` otherwise).
    party:
        For inputs, random draws and outputs: the member (``None`` for messages).
    draw:
        For random draws: the index k of the draw in the member's tape.
    element:
        The element index of a multi-element value (``None`` for one-element values).
    name:
        The display name, as in :meth:`privsim.View.columns` (``msg r1 0->C``).

    Examples
    --------
    >>> c = Column.parse("msg r2 3->C[1]")
    >>> c.kind, c.round, c.sender, c.receiver, c.element, str(c)
    ('msg', 2, 3, 'C', 1, 'msg r2 3->C[1]')
    >>> Column.parse("rand 0#4").draw
    4
    """

    kind: str
    round: int | None = None
    sender: int | str | None = None
    receiver: int | str | None = None
    party: int | str | None = None
    draw: int | None = None
    element: int | None = None
    name: str = ""

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, name: str) -> Column:
        """The record of a column name of :meth:`privsim.View.columns`.

        Raises
        ------
        ValueError
            ``name`` is not a view column name.
        """
        m = _COLUMN.fullmatch(name)
        if m is None:
            raise ValueError(f"not a view column name: {name!r}")
        element = None if m["element"] is None else int(m["element"])
        if m["round"] is not None:
            return cls("msg", round=int(m["round"]), sender=_party(m["sender"]),
                       receiver=_party(m["receiver"]), element=element, name=name)
        if m["draw"] is not None:
            return cls("rand", party=_party(m["rparty"]), draw=int(m["draw"]), element=element, name=name)
        return cls(m["kind"], party=_party(m["party"]), element=element, name=name)

    def matches(self, **fields: object) -> bool:
        """Whether every given field equals this record's (party ids compare as text too).

        >>> Column.parse("msg r1 0->C").matches(kind="msg", sender=0, receiver="C")
        True
        """
        return all(str(getattr(self, k)) == str(v) for k, v in fields.items())
