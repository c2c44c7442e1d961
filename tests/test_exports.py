"""Pin the public surface (as trio's test_exports does)."""

from __future__ import annotations

import pytest

import privsim


def test_public_names():
    assert sorted(privsim.__all__) == sorted([
        "CURATOR", "DeadlockError", "Inbox", "InputError", "Param", "ParameterError", "PartyContext",
        "PartyFailure", "PrivsimError", "Privacy", "Protocol", "Schedule", "ScheduleViolation",
        "SimulationResult", "View", "ViewNotRecorded", "audit", "simulate",
    ])
    for name in privsim.__all__:
        obj = getattr(privsim, name)
        assert obj.__doc__, f"{name} has no docstring"


def test_errors_are_one_family():
    for name in ("DeadlockError", "InputError", "ParameterError", "PartyFailure", "ScheduleViolation",
                 "ViewNotRecorded"):
        assert issubclass(getattr(privsim, name), privsim.PrivsimError)


def test_every_package_exports_explicitly():
    # Explicit exports everywhere (trio's habit): no `import *`, and every package names
    # what it exports in a literal __all__ that holds only names it defines or imports.
    import ast
    from pathlib import Path

    root = Path(privsim.__file__).parent
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        stars = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)]
        assert not stars, f"{path.relative_to(root)}: import *"
        if path.name == "__init__.py":
            assigned = [n for n in tree.body if isinstance(n, ast.Assign)
                        and any(getattr(t, "id", "") == "__all__" for t in n.targets)]
            assert assigned and isinstance(assigned[0].value, ast.List), f"{path.relative_to(root)}: literal __all__"
            assert all(isinstance(e, ast.Constant) for e in assigned[0].value.elts), path


def test_the_registry_fails_loudly_on_a_bad_built_in(monkeypatch):
    import privsim.protocols as protocols
    from privsim.errors import ProtocolError

    monkeypatch.setitem(protocols._BUILTIN, "typo", "privsim.protocols.shuffle:ShufleRR")
    with pytest.raises(ProtocolError, match="built-in protocol 'typo'"):
        protocols.REGISTRY["typo"]
    monkeypatch.setitem(protocols._BUILTIN, "typo", "privsim.protocols.no_such_module:X")
    with pytest.raises(ModuleNotFoundError):
        list(protocols.REGISTRY)


def test_no_built_in_uses_the_deprecated_audit_score_signature():
    import warnings

    import numpy as np

    from privsim.protocols import REGISTRY
    from privsim.protocols.base import _legacy_audit_score

    assert not [name for name, cls in REGISTRY.items() if _legacy_audit_score(cls().audit_score)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        REGISTRY["shuffle-rr"]().make_audit_score(["msg r1 1->S", "output C"], ["S"], 1, 4, 3,
                                                 np.zeros(4), np.eye(4)[1])


def test_the_alias_the_readme_documented_warns_and_the_other_is_gone():
    import importlib
    import sys

    sys.modules.pop("privsim.analysis.views", None)
    with pytest.warns(DeprecationWarning, match="privsim.analysis.views is deprecated"):
        importlib.import_module("privsim.analysis.views")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("privsim.analysis.accuracy")
