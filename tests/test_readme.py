"""The README is a door: the two commands first, a short map into the docs site, links
that lead somewhere, and its one example the same as the docs page that explains it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def test_readme_opens_with_the_two_commands():
    text = README.read_text()
    first = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    assert "pip install -e '.[dev]' && privsim run scenarios/randomized_response.toml" in first
    assert "pytest" in first
    assert text.index(first) < 1200  # in the first screenful


def test_readme_is_a_door_into_the_site():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    assert "mkdocs build --strict" in text  # the one command that builds the site
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not link.startswith("http")]
    assert len(local) >= 12
    for link in local:
        assert (ROOT / link).exists(), f"the README links to {link}, which does not exist"
    for page in ("docs/getting-started.md", "docs/protocols/writing.md", "docs/tutorials/audit.md"):
        assert page in local


def test_readme_example_is_the_docs_example():
    def block(text):
        return next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "class LocalLaplace" in b)

    assert block(README.read_text()) == block((ROOT / "docs" / "protocols" / "writing.md").read_text())
