"""A griffe extension for privsim's API pages: a doctest outside an ``Examples`` section
gets one, so that the numpy parser renders it as code instead of misreading its lines as
parameters or Markdown (``[1, 2][...]`` would read as a link)."""

from __future__ import annotations

import re

import griffe

_HEADER = re.compile(r"^\s*-{3,}\s*$")


def with_examples_sections(text: str) -> str:
    """``text`` with an ``Examples`` header before every doctest that is not under one.

    >>> with_examples_sections("Sum.\\n\\n>>> 1 + 1\\n2").splitlines()[1:4]
    ['', 'Examples', '--------']
    """
    lines = text.splitlines()
    out: list[str] = []
    section = ""
    in_doctest = False
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and line.strip() and _HEADER.match(lines[i + 1]):
            section = line.strip()
        starts = line.lstrip().startswith(">>>")
        if starts and not in_doctest and section != "Examples":
            if out and out[-1].strip():
                out.append("")
            out += ["Examples", "--------"]
            section = "Examples"
        in_doctest = starts or (in_doctest and bool(line.strip()))
        out.append(line)
    return "\n".join(out)


class DoctestExamples(griffe.Extension):
    """Give every docstring's stray doctests an ``Examples`` section."""

    def on_instance(self, *, node, obj, agent, **kwargs) -> None:  # noqa: ANN001, ANN003
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = with_examples_sections(obj.docstring.value)
