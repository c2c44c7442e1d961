"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_blocks_run():
    blocks = python_blocks()
    assert len(blocks) >= 2
    for code in blocks:
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})


def test_readme_protocol_example_is_short():
    example = next(b for b in python_blocks() if "class LocalLaplace" in b)
    body = example.split("res = privsim.simulate")[0].strip().splitlines()
    assert len(body) < 40


def test_readme_opens_with_the_three_commands():
    text = README.read_text()
    first = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    assert "pip install -e '.[dev]' && privsim run scenarios/randomized_response.toml" in first
    assert "pytest" in first


def readme_commands():
    text = README.read_text()
    blocks = re.findall(r"```console\n(.*?)```", text, flags=re.S)
    return [line[2:].split() for block in blocks for line in block.splitlines() if line.startswith("$ privsim ")]


def test_readme_commands_run_and_write_every_figure(tmp_path, capsys):
    """Follow the tutorial at reduced size: every command runs and every promised figure appears."""
    from privsim.cli import main

    promised = set(re.findall(r"!\[[^\]]*\]\((docs/[^)]+\.png)\)", README.read_text()))
    written = set()
    commands = readme_commands()
    assert len(commands) >= 8
    for argv in commands:
        args = argv[1:]
        if "--plot" in args:
            k = args.index("--plot")
            written.add(args[k + 1])
            args[k + 1] = str(tmp_path / Path(args[k + 1]).name)
        small = "4" if "headline" in " ".join(args) else ("4096" if args[0] in ("audit", "bounds") else "40")
        if "--trials" in args:
            args[args.index("--trials") + 1] = small
        elif args[0] != "views":
            args += ["--trials", small]
        main([*args, "--json"] if args[0] != "views" else args)
        capsys.readouterr()
    assert promised <= written, f"figures the README shows but no command writes: {promised - written}"
    for name in promised:
        assert (tmp_path / Path(name).name).stat().st_size > 1000
