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
