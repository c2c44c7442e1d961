"""The CLI reference, generated from the CLI itself so that it cannot drift.

The docs site's CLI page (docs/reference/cli.md) is rendered from :func:`cli_reference`
when the site is built (tools/mkdocs_hooks.py). ``python -m privsim.cli_reference --write
FILE.md`` rewrites the block between the ``<!-- cli-reference:start -->`` and
``<!-- cli-reference:end -->`` markers of any other Markdown file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

__all__ = ["START", "END", "cli_reference", "update_readme"]

START = "<!-- cli-reference:start -->"
END = "<!-- cli-reference:end -->"


def cli_reference(width: int = 100) -> str:
    """The help of every ``privsim`` subcommand as Markdown (fixed width, so it is reproducible).

    >>> "privsim run [OPTIONS]" in cli_reference()
    True
    """
    from privsim.cli import app

    group = typer.main.get_command(app)
    ctx_cls = type(group.make_context("privsim", [], resilient_parsing=True))
    root = ctx_cls(group, info_name="privsim", terminal_width=width, max_content_width=width)
    parts = ["```text", group.get_help(root), "```"]
    for name in group.list_commands(root):
        cmd = group.get_command(root, name)
        ctx = ctx_cls(cmd, info_name=f"privsim {name}", terminal_width=width, max_content_width=width)
        parts += ["", f"#### `privsim {name}`", "", "```text", cmd.get_help(ctx), "```"]
    return "\n".join(parts) + "\n"


def update_readme(path: str | Path) -> bool:
    """Rewrite the reference block of ``path``; returns whether anything changed.

    Example: ``python -m privsim.cli_reference --write README.md`` after changing the CLI.
    """
    p = Path(path)
    text = p.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{p}: no {START} ... {END} block")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{cli_reference()}{END}{tail}"
    if new != text:
        p.write_text(new)
    return new != text


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        print("updated" if update_readme(sys.argv[2]) else "up to date")
    else:
        print(cli_reference())
