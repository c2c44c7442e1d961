"""Every public name is documented (the site's CLI reference, generated from the CLI, is
checked in test_docs_site.py)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import privsim

ROOT = Path(__file__).resolve().parent.parent


def public_modules():
    for info in pkgutil.walk_packages(privsim.__path__, "privsim."):
        if not info.name.split(".")[-1].startswith("_") and info.name != "privsim.__main__":
            yield importlib.import_module(info.name)


def test_every_public_name_has_a_docstring():
    missing = []
    for module in public_modules():
        assert module.__doc__, f"{module.__name__} has no module docstring"
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                if not (obj.__doc__ or "").strip():
                    missing.append(f"{module.__name__}.{name}")
    assert not missing, missing


def test_public_functions_and_classes_show_an_example():
    # Docstrings teach with a runnable example (pytest --doctest-modules runs them).
    without = []
    for module in public_modules():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == module.__name__:
                doc = obj.__doc__ or ""
                if ">>>" not in doc and "Example" not in doc and "example" not in doc:
                    without.append(f"{module.__name__}.{name}")
    assert not without, without


def test_code_cites_sections_of_docs_architecture_that_exist():
    import re

    text = (ROOT / "docs" / "architecture.md").read_text()
    sections = set(re.findall(r"^## (.+)$", text, flags=re.M))
    cited = set()
    for path in (ROOT / "privsim").rglob("*.py"):
        src = path.read_text()
        assert "DESIGN.md" not in src, f"{path}: cite docs/architecture.md, not DESIGN.md"
        cited |= set(re.findall(r'docs/architecture\.md, "([^"]+)"', src))
    assert cited and cited <= sections, sorted(cited - sections)


def test_docstrings_are_numpy_style():
    import re

    google = re.compile(r"^\s*(Args|Arguments|Returns|Raises|Yields):\s*$", flags=re.M)
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "privsim").rglob("*.py") if google.search(p.read_text())]
    assert not offenders, f"Google-style sections (use numpy's Parameters / Returns / Raises): {offenders}"
