"""Users' protocols: from a file, from an importable module, or from an installed plugin.

A ``--protocol`` value (and a scenario's ``protocol = "..."``) is one of

* a built-in or :func:`~privsim.protocols.register`-ed name (``secure-sum``);
* ``path/to/file.py:ClassName``: the file is imported as a module of its own (a
  relative path is relative to the working directory, or, in a scenario file, to the
  scenario file's folder);
* ``package.module:ClassName``: imported like any module (the working directory is
  searched too, as ``python -m`` would);
* the name of a plugin: an entry point of the group :data:`ENTRY_POINT_GROUP`
  (``[project.entry-points."privsim.protocols"] relay-sum = "mypkg:RelaySum"``).

How a user's protocol reaches worker processes (``--executor processes`` or ``dask``):
a class loaded from a *file* travels **by value** (its module is registered with
:func:`cloudpickle.register_pickle_by_value`, so workers need not see the file); a class
from a *module* or a *plugin* travels **by import path**, so the workers import it: the
package must be installed where they run (or be on their ``PYTHONPATH``).

Every failure is a :class:`ProtocolLoadError` with a one-line message naming the
``--protocol`` value, the file or module, and what was expected.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from privsim.errors import ParameterError
from privsim.protocols.base import Protocol

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "PluginInfo", "ProtocolLoadError", "absolute_reference", "file_of", "is_reference",
           "load_reference", "plugins", "plugin_class"]

#: The entry-point group plugins declare their protocols in.
ENTRY_POINT_GROUP = "privsim.protocols"


class ProtocolLoadError(ParameterError):
    """A user's protocol could not be loaded (bad file, missing class, not a Protocol, name clash).

    >>> load_reference("no_such_file.py:Thing")
    Traceback (most recent call last):
    privsim.protocols.loading.ProtocolLoadError: --protocol no_such_file.py:Thing: file no_such_file.py does not exist
    """


def is_reference(spec: str) -> bool:
    """Whether ``spec`` names a file or module (``FILE.py:Class``, ``pkg.mod:Class``), not a registered name.

    >>> is_reference("relay.py:RelaySum"), is_reference("secure-sum")
    (True, False)
    """
    return ":" in spec


def _split(spec: str) -> tuple[str, str]:
    where, _, attr = spec.rpartition(":")
    if not where or not attr.isidentifier():
        raise ProtocolLoadError(f"--protocol {spec}: expected FILE.py:ClassName or package.module:ClassName "
                                f"(got {spec!r})")
    return where, attr


def _is_file(where: str) -> bool:
    return where.endswith(".py") or "/" in where or "\\" in where


def absolute_reference(spec: str, folder: str | Path) -> str:
    """``spec`` with a relative file path made relative to ``folder`` (used for scenario files).

    >>> absolute_reference("relay.py:RelaySum", "/work/scenarios")
    '/work/scenarios/relay.py:RelaySum'
    >>> absolute_reference("secure-sum", "/work/scenarios")
    'secure-sum'
    """
    if not is_reference(spec):
        return spec
    where, _, attr = spec.rpartition(":")
    if not _is_file(where) or Path(where).is_absolute():
        return spec
    return f"{Path(folder) / where}:{attr}"


def load_reference(spec: str) -> type[Protocol]:
    """The protocol class a ``FILE.py:Class`` or ``package.module:Class`` reference names.

    Raises
    ------
    ProtocolLoadError
        The file does not exist or fails to import, the module is not found, the class is
        missing or is not a Protocol subclass, or its ``name`` is a built-in's.

    Examples
    --------
    >>> load_reference("privsim.protocols.leaky:LeakyRR").name
    'leaky-rr'
    """
    where, attr = _split(spec)
    module = _import_file(spec, Path(where)) if _is_file(where) else _import_module(spec, where)
    return _protocol_class(spec, module, attr, where)


# ------------------------------------------------------------------ files
_FILES: dict[tuple[str, float], ModuleType] = {}


def _import_file(spec: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise ProtocolLoadError(f"--protocol {spec}: file {path} does not exist")
    if path.suffix != ".py":
        raise ProtocolLoadError(f"--protocol {spec}: {path} is not a Python file (expected FILE.py:ClassName)")
    path = path.resolve()
    key = (str(path), path.stat().st_mtime)
    if key in _FILES:  # run, views and audit in one process load the file once
        return _FILES[key]
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"privsim_user_{path.stem if path.stem.isidentifier() else 'protocol'}_{digest}"
    loader_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loader_spec)  # type: ignore[arg-type]
    sys.modules[name] = module  # dataclasses and pickling look classes' modules up here
    folder = str(path.parent)
    if folder not in sys.path:  # as `python FILE.py` would: the file can import modules beside it
        sys.path.insert(0, folder)
    before = set(sys.modules)
    try:
        loader_spec.loader.exec_module(module)  # type: ignore[union-attr]
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # a file's own exit or Ctrl-C is its failure
        del sys.modules[name]
        raise ProtocolLoadError(f"--protocol {spec}: {path.name} failed to import: {_where_failed(exc, path)}"
                                ) from None
    import cloudpickle

    # Workers receive the class itself (see the module doc), and the modules beside it
    # that it imported, which they could not import from a folder they may not see.
    for other in [module, *_siblings(set(sys.modules) - before, path.parent)]:
        cloudpickle.register_pickle_by_value(other)
    _FILES[key] = module
    return module


def file_of(cls: type) -> str | None:
    """The file a class was loaded from by a ``FILE.py:Class`` reference, else None.

    >>> from privsim.protocols import RandomizedResponse
    >>> file_of(RandomizedResponse) is None
    True
    """
    module = sys.modules.get(cls.__module__)
    return next((file for (file, _), loaded in _FILES.items() if loaded is module), None)


def _siblings(names: set[str], folder: Path) -> list[ModuleType]:
    found = []
    for name in sorted(names):
        mod = sys.modules.get(name)
        file = getattr(mod, "__file__", None)
        if mod is None or "." in name or not file:
            continue
        file_path = Path(file).resolve()  # a module or a package right beside it, not a venv below it
        if file_path.parent == folder or (file_path.name == "__init__.py" and file_path.parent.parent == folder):
            found.append(mod)
    return found


def _where_failed(exc: BaseException, path: Path) -> str:
    # The error and the line of the user's file it came from (the deepest frame in it).
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    if isinstance(exc, SystemExit):
        where = f" (line {lines[-1]})" if lines else ""
        return f"it called sys.exit({exc.code!r}){where}; a protocol file must not exit"
    message = f": {str(exc).splitlines()[0]}" if str(exc) else ""
    return f"{type(exc).__name__}{message}" + (f" (line {lines[-1]})" if lines else "")


# ------------------------------------------------------------------ modules
def _import_module(spec: str, dotted: str) -> ModuleType:
    cwd = str(Path.cwd())
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as exc:
        if exc.name not in (dotted, dotted.partition(".")[0]) or cwd in sys.path or "" in sys.path:
            _module_failed(spec, dotted, exc)
    except Exception as exc:
        _module_failed(spec, dotted, exc)
    # As `python -m` would, look in the working directory too. (The workers must still be
    # able to import the module themselves: it travels by import path.)
    sys.path.append(cwd)
    try:
        return importlib.import_module(dotted)
    except Exception as exc:
        sys.path.remove(cwd)
        _module_failed(spec, dotted, exc)


def _module_failed(spec: str, dotted: str, exc: BaseException) -> NoReturn:
    if isinstance(exc, ModuleNotFoundError) and exc.name in (dotted, dotted.partition(".")[0]):
        raise ProtocolLoadError(f"--protocol {spec}: no module named {exc.name!r} (expected an installed "
                                "package or a module on PYTHONPATH; for a file write FILE.py:Class)") from None
    raise ProtocolLoadError(f"--protocol {spec}: module {dotted} failed to import: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''}") from None


# ------------------------------------------------------------------ classes
def _protocol_class(spec: str, module: ModuleType, attr: str, where: str) -> type[Protocol]:
    obj = getattr(module, attr, None)
    if obj is None:
        found = sorted(k for k, v in vars(module).items()
                       if isinstance(v, type) and issubclass(v, Protocol) and v is not Protocol)
        raise ProtocolLoadError(f"--protocol {spec}: {where} has no class {attr!r} (Protocol classes there: "
                                f"{', '.join(found) or 'none'})")
    return check_protocol_class(spec, obj)


def check_protocol_class(spec: str, obj: Any) -> type[Protocol]:
    """``obj`` if it is a Protocol subclass whose ``name`` is not a built-in's; else a one-line error."""
    if not (isinstance(obj, type) and issubclass(obj, Protocol)) or obj is Protocol:
        what = f"class {obj.__name__}" if isinstance(obj, type) else f"a {type(obj).__name__}"
        raise ProtocolLoadError(f"--protocol {spec}: {spec.rpartition(':')[2] or spec} is {what}, not a subclass "
                                "of privsim.Protocol (expected class ...(Protocol))")
    _check_clash(spec, obj.name, obj)
    return obj


def _check_clash(spec: str, name: str, cls: type | None) -> None:
    from privsim.protocols import _BUILTIN, REGISTRY

    if name in _BUILTIN and (cls is None or REGISTRY.get(name) is not cls):
        raise ProtocolLoadError(f"--protocol {spec}: the name {name!r} is a built-in protocol's (expected a name "
                                f"of its own; built-ins: {', '.join(sorted(_BUILTIN))})")


# ------------------------------------------------------------------ plugins
@dataclass(frozen=True)
class PluginInfo:
    """One installed plugin protocol: its name, ``module:Class`` target and distribution.

    >>> PluginInfo("relay-sum", "privsim_relay:RelaySum", "privsim-relay").name
    'relay-sum'
    """

    name: str
    target: str
    distribution: str


def _entry_points() -> Iterator[EntryPoint]:
    from importlib.metadata import entry_points  # (about 0.1 s: only where plugins are looked up)

    return iter(entry_points(group=ENTRY_POINT_GROUP))


def plugins() -> list[PluginInfo]:
    """The installed plugin protocols, by name (one entry per name, even if installed twice).

    >>> all(p.name for p in plugins())
    True
    """
    seen: dict[str, PluginInfo] = {}
    for ep in _entry_points():
        dist = ep.dist.name if getattr(ep, "dist", None) is not None else "?"  # type: ignore[union-attr]
        seen.setdefault(ep.name, PluginInfo(ep.name, ep.value, dist))
    return sorted(seen.values(), key=lambda p: p.name)


def plugin_class(info: PluginInfo) -> type[Protocol]:
    """Load a plugin's protocol class (it travels by import path).

    Raises
    ------
    ProtocolLoadError
        The plugin's name is a built-in's, its module fails to import, or its target is
        not a Protocol subclass.

    Examples
    --------
    >>> plugin_class(PluginInfo("leaky-copy", "privsim.protocols.leaky:LeakyRR", "example")).__name__
    'LeakyRR'
    """
    spec = f"{info.name} (plugin {info.target} of {info.distribution})"
    _check_clash(spec, info.name, None)
    where, _, attr = info.target.partition(":")
    module = _import_module(spec, where.strip())
    obj: Any = module
    for part in attr.strip().split(".") if attr.strip() else []:
        obj = getattr(obj, part, None)
        if obj is None:
            _protocol_class(spec, module, attr.strip(), where)  # raises: names what is there
    return check_protocol_class(spec, obj)
