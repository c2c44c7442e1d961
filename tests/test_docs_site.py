"""The docs site builds in strict mode (a broken link, anchor or reference fails), and it
holds what it promises: a reference page for every public name, a page per protocol, the
CLI reference as the CLI prints it, and the way from the front page to writing and
auditing a protocol in two clicks."""

from __future__ import annotations

import functools
import html
import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import _site_build  # noqa: E402
from mkdocs_hooks import _homes, public_modules  # noqa: E402


@pytest.fixture(scope="module")
def site() -> Path:
    """The site, built by ``mkdocs build --strict`` (started when the suite was collected)."""
    code, output, out = _site_build.wait()
    assert code == 0, output[-3000:]
    return out


@functools.cache
def _read(path: Path) -> str:
    return path.read_text()


def page(site: Path, path: str) -> str:
    return _read(site / path / "index.html")


def test_every_public_name_has_a_reference_entry(site):
    import inspect

    modules = public_modules()
    homes = _homes(modules)
    missing = []
    for name in modules:
        mod = importlib.import_module(name)
        text = page(site, f"reference/api/{name}")
        for n in getattr(mod, "__all__", []):
            obj = getattr(mod, n)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            home = homes[f"{obj.__module__}.{n}"]
            anchor = f"{obj.__module__}.{n}" if home == obj.__module__ else f"{home}.{n}"
            if f'id="{anchor}"' not in page(site, f"reference/api/{home}"):
                missing.append(f"{name}.{n}")
            if home != name:
                assert f"{home}/#{home}.{n}" in text, f"{name}'s page does not link {n} to {home}"
    assert not missing, missing
    assert 'id="privsim.simulate.simulate"' in page(site, "reference/api/privsim.simulate")
    noise_source = page(site, "reference/api/privsim.mechanisms.noise_source")  # defined there, exported elsewhere
    assert 'id="privsim.mechanisms.noise_source.tree_height"' in noise_source


def test_members_from_a_private_base_are_documented_on_the_class(site):
    # JoinSizeEstimator's rows and T live in private bases (sketch._TableShape,
    # _counter_noise._ContinualSketch); mkdocstrings shows no inherited member unless asked.
    join = page(site, "reference/api/privsim.mechanisms.join")
    for name in ("rows", "width", "T", "t", "rho", "trials", "noise", "calibration"):
        assert f'id="privsim.mechanisms.join.JoinSizeEstimator.{name}"' in join, name
    hashing = page(site, "reference/api/privsim.mechanisms.hashing")
    assert 'id="privsim.mechanisms.hashing.BucketHash.shape"' in hashing


def test_every_protocol_has_a_page_with_its_parameters(site):
    from privsim.protocols import REGISTRY

    for name, cls in REGISTRY.items():
        text = page(site, f"protocols/{name}")
        for param in cls.params:
            assert f"<code>{param}</code>" in text, (name, param)
        assert f"{cls.__module__}/#{cls.__module__}.{cls.__qualname__}" in text


def test_cli_reference_is_the_cli_help(site):
    from privsim.cli_reference import cli_reference

    text = html.unescape(re.sub(r"<[^>]+>", "", page(site, "reference/cli")))
    for block in re.findall(r"```text\n(.*?)```", cli_reference(), flags=re.S):
        for line in block.splitlines():
            assert line.strip() in text, line


def test_writing_and_auditing_a_protocol_is_two_clicks_from_the_front_page(site):
    front = page(site, "")
    assert 'href="protocols/writing/"' in front and 'href="tutorials/audit/"' in front
    writing = html.unescape(re.sub(r"<[^>]+>", "", page(site, "protocols/writing")))
    assert "class RelaySum(Protocol)" in writing and "privsim audit --protocol examples/relay_sum.py" in writing
