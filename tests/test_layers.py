"""privsim's modules import only downward, and never in a cycle (docs/architecture.md, "Layers").

Layers, from the bottom: errors and interrupts; network (schedule, messages, inboxes); parties; mechanisms;
privacy claims; protocols; the engine (simulate, results, views, executors, scenarios,
transports); analysis; the command line; the package itself. A module may import its own
layer or any below it. Both checks read every runtime import, those inside functions too
(only ``if TYPE_CHECKING:`` blocks are left out): a function-level import that closes a
cycle still ties the two modules together, and only hides the cycle from the importer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent / "privsim"

#: (prefix, layer): the longest matching prefix of a module's dotted name decides.
LAYERS = [
    ("privsim.errors", 0), ("privsim.interrupts", 0),
    ("privsim.network", 1),
    ("privsim.parties", 2),
    ("privsim.mechanisms", 3),
    ("privsim.privacy", 4),
    ("privsim.mechanisms.noise_families", 4),  # a noise family carries its privacy map (a Privacy claim)
    ("privsim.protocols", 5),
    ("privsim.plan", 6), ("privsim.simulate", 6), ("privsim.views", 6), ("privsim.accuracy", 6),
    ("privsim.executors", 6), ("privsim.scenario", 6), ("privsim.resources", 6), ("privsim.transport", 6),
    ("privsim.analysis", 7), ("privsim.display", 7), ("privsim.report", 7), ("privsim.figures", 7),
    ("privsim.cli", 8), ("privsim.cli_support", 8), ("privsim.cli_reference", 8), ("privsim.__main__", 8),
    ("privsim", 9),
]


def layer(module: str) -> int:
    best = max((p for p, _ in LAYERS if module == p or module.startswith(p + ".")), key=len, default=None)
    assert best is not None, f"{module}: give it a layer in tests/test_layers.py"
    return dict(LAYERS)[best]


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING" or (
        isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")


def imports(module: str, path: Path, known: set[str]) -> list[tuple[str, bool]]:
    """(imported privsim module, at module level?) for every runtime import in ``path``."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import):
                found.extend((a.name, top) for a in child.names if a.name.startswith("privsim"))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - child.level + 1] + [base]).strip(".")
                if base.startswith("privsim"):
                    for a in child.names:  # `from privsim.x import y`: y may be a module itself
                        sub = f"{base}.{a.name}"
                        found.append((sub if sub in known else base, top))
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, True)
    return found


MODULES = modules()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_downward(module):
    own = layer(module)
    upward = sorted({m for m, _ in imports(module, MODULES[module], set(MODULES))
                     if m != module and layer(m) > own and not module.startswith(m + ".")})
    assert not upward, f"{module} (layer {own}) imports upward: {upward}"


def test_no_import_cycles():
    graph = nx.DiGraph()
    for module, path in MODULES.items():
        for m, _ in imports(module, path, set(MODULES)):
            # A package's __init__ importing its own submodules is how a package is built.
            if m != module and not m.startswith(module + "."):
                graph.add_edge(module, m)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_the_checker_sees_an_upward_import(tmp_path):
    fake = tmp_path / "privsim" / "network"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("from privsim.analysis.audit import audit\n")
    found = imports("privsim.network.bad", fake / "bad.py", set(MODULES))
    assert any(layer(m) > layer("privsim.network.bad") for m, _ in found)


def _package(module: str) -> str:
    # privsim.x.y -> privsim.x; a top-level module (privsim.simulate) is a package of its own
    return ".".join(module.split(".")[:2])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_imported_across_packages(module):
    tree = ast.parse(MODULES[module].read_text())
    crossing = sorted(f"{node.module}.{a.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                      and (node.module or "").startswith("privsim") and _package(node.module) != _package(module)
                      for a in node.names if a.name.startswith("_") and a.name != "__version__"
                      and f"{node.module}.{a.name}" not in MODULES)
    assert not crossing, f"{module} imports another package's private names: {crossing}"


def test_the_checker_sees_a_function_level_import(tmp_path):
    fake = tmp_path / "privsim" / "network"
    fake.mkdir(parents=True)
    (fake / "late.py").write_text("def f():\n    from privsim.simulate import simulate\n")
    assert imports("privsim.network.late", fake / "late.py", set(MODULES)) == [("privsim.simulate", False)]


def test_the_plan_imports_no_transport():
    """The transports read the plan (and the resource check); the plan names its transport
    through the interface it defines and imports none of them, not even for type checking,
    so that no import runs from the plan back to privsim/transport/."""
    tree = ast.parse(MODULES["privsim.plan"].read_text())
    named = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    named |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert not {m for m in named if m == "privsim.transport" or m.startswith("privsim.transport.")}


def test_transports_register_their_names():
    from privsim.plan import Transport, resolve_transport
    from privsim.transport import LocalTransport, TcpTransport

    assert type(resolve_transport("local")) is LocalTransport and type(resolve_transport("tcp")) is TcpTransport
    t = LocalTransport(cohorts=False)
    assert resolve_transport(t) is t and isinstance(t, Transport)
