"""The benchmark scripts as modules, for the tests of their arithmetic and guards (bench/ is
not a package: each script runs on its own, and ``privsim bench`` loads them by path)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench(name: str) -> ModuleType:
    """``bench/bench_NAME.py``, freshly executed as a module."""
    spec = importlib.util.spec_from_file_location(f"privsim_bench_{name}_under_test", BENCH / f"bench_{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
