"""MkDocs hooks for privsim's site: pages generated from the code, so they cannot drift.

- ``reference/api/<module>.md``: one page per public module (mkdocstrings renders its
  numpy docstrings); a new module gets its page without anyone writing it.
- ``protocols/<name>.md``: one page per registered protocol: what it is, its parameters
  (the CLI's ``privsim protocols NAME``), its module's mathematics and its claims.
- ``<!-- cli-reference -->`` in a page becomes the help of every ``privsim`` command
  (:func:`privsim.cli_reference.cli_reference`).

Build with ``mkdocs build --strict`` from the repository's root.
"""

from __future__ import annotations

import importlib
import pkgutil

from mkdocs.structure.files import File

CLI_MARKER = "<!-- cli-reference -->"


def public_modules() -> list[str]:
    """The importable public modules of privsim (no ``_private`` part, no ``__main__``)."""
    import privsim

    names = ["privsim"]
    for info in pkgutil.walk_packages(privsim.__path__, "privsim."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def protocols() -> dict[str, type]:
    """The built-in protocols by CLI name."""
    from privsim.protocols import REGISTRY

    return dict(sorted(REGISTRY.items()))


def _exported(mod) -> list[tuple[str, object]]:
    """The classes and functions a module exports (its ``__all__``)."""
    import inspect

    return [(n, obj) for n in getattr(mod, "__all__", [])
            if (inspect.isclass(obj := getattr(mod, n, None)) or inspect.isfunction(obj))]


def _homes(modules: list[str]) -> dict[str, str]:
    """For every exported class and function (``module.name`` of its definition), the one
    page that documents it: its defining module's, else (a module that is not public) the
    first public module exporting it. A name documented twice would have two anchors, and
    one rendered through an import alias is at the mercy of the alias's resolution."""
    homes: dict[str, str] = {}
    for name in modules:
        for n, obj in _exported(importlib.import_module(name)):
            home = obj.__module__
            homes.setdefault(f"{home}.{n}", home if home in modules else name)
    return homes


def _from_private_bases(objects: list[object]) -> list[str]:
    """The public members the classes among ``objects`` inherit from a private base of their
    own package (``_TableShape``'s ``rows``): documented on the class, as if defined there."""
    import inspect

    names: set[str] = set()
    for cls in filter(inspect.isclass, objects):
        for base in cls.__mro__[1:]:
            if base.__name__.startswith("_") and base.__module__.split(".")[0] == "privsim":
                names.update(n for n in vars(base) if not n.startswith("_"))
    return sorted(names)


def _api_page(module: str, homes: dict[str, str]) -> str:
    """A module's page: its docstring and the names it documents (those it defines and
    exports, and those it defines that another module exports); a name documented on
    another module's page is linked from here."""
    mod = importlib.import_module(module)
    own = [n for n, obj in _exported(mod) if homes.get(f"{obj.__module__}.{n}") == module]
    own += [key.rsplit(".", 1)[1] for key, page in homes.items()
            if page == module and key.rsplit(".", 1)[0] == module and key.rsplit(".", 1)[1] not in own]
    elsewhere = [(n, homes[f"{obj.__module__}.{n}"]) for n, obj in _exported(mod)
                 if homes.get(f"{obj.__module__}.{n}") not in (None, module)]
    lines = [f"# `{module}`", "", f"::: {module}", "    options:", "      show_root_heading: false",
             "      show_submodules: false"]
    if hasattr(mod, "__all__"):
        lines.append(f"      members: [{', '.join(own)}]" if own else "      members: false")
    inherited = _from_private_bases([getattr(mod, n, None) for n in own])
    if inherited:
        lines.append(f"      inherited_members: [{', '.join(inherited)}]")
    if elsewhere:
        lines += ["", "## Also exported here", ""]
        lines += [f"- [`{n}`]({page}.md#{page}.{n})" for n, page in elsewhere]
    return "\n".join(lines) + "\n"


def _api_index(modules: list[str]) -> str:
    lines = ["# Python API", "", "Generated from the numpy docstrings of every public module "
             "(`tools/mkdocs_hooks.py`).", ""]
    for name in modules:
        mod = importlib.import_module(name)
        first = (mod.__doc__ or "").strip().splitlines()[0] if mod.__doc__ else ""
        lines.append(f"- [`{name}`]({name}.md): {first}")
    return "\n".join(lines) + "\n"




def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _protocol_page(name: str, cls: type) -> str:
    doc = (cls.__doc__ or "").strip().splitlines()
    lines = [f"# {name}", "", _cell(doc[0]) if doc else "", "",
             f"`privsim run --protocol {name}`; in Python `get_protocol(\"{name}\", ...)` or "
             f"`{cls.__module__}.{cls.__qualname__}(...)`. The table of every protocol, with its cost, "
             "error and claims, is on [Protocols](index.md).", "", "## Parameters", "",
             "| parameter | allowed | default | what it means |", "|---|---|---|---|"]
    for key, p in cls.params.items():
        lines.append(f"| `{key}` | {_cell(p.allowed())} | `{_cell(p.default)}` | {_cell(p.doc)} |")
    module = importlib.import_module(cls.__module__)
    lines += ["", "## Mathematics and claims", "", _as_text(module.__doc__), "", _as_text(cls.__doc__), "",
              f"The class, its claims (`privacy`) and its estimator: "
              f"[`{cls.__module__}.{cls.__qualname__}`](../reference/api/{cls.__module__}.md"
              f"#{cls.__module__}.{cls.__qualname__}).", ""]
    return "\n".join(lines)


def _as_text(doc: str | None) -> str:
    """A docstring as Markdown: doctests and indented blocks fenced as code."""
    import inspect

    out, code = [], False
    for line in inspect.cleandoc(doc or "").splitlines():
        is_code = line.startswith((">>>", "...", "    ")) or (code and line.strip() != "")
        if is_code != code:
            out.append("```python" if is_code else "```")
            code = is_code
        out.append(line)
    if code:
        out.append("```")
    return "\n".join(out)


def on_config(config):
    """Add the generated pages to the navigation."""
    nav = config["nav"]
    for section in nav:
        if isinstance(section, dict) and "Protocols" in section:
            section["Protocols"] += [{name: f"protocols/{name}.md"} for name in protocols()]
        if isinstance(section, dict) and "Reference" in section:
            # One entry: the index links every module's page (a nav of ~90 pages, rendered
            # into every page, would double the build's time).
            section["Reference"].append({"Python API": "reference/api/index.md"})
    return config


def on_files(files, config):
    """Generate the API and protocol pages."""
    modules = public_modules()
    homes = _homes(modules)
    files.append(File.generated(config, "reference/api/index.md", content=_api_index(modules)))
    for name in modules:
        files.append(File.generated(config, f"reference/api/{name}.md", content=_api_page(name, homes)))
    for name, cls in protocols().items():
        files.append(File.generated(config, f"protocols/{name}.md", content=_protocol_page(name, cls)))
    return files


def on_page_markdown(markdown, page, config, files):
    """Render the CLI reference where a page asks for it."""
    if CLI_MARKER in markdown:
        from privsim.cli_reference import cli_reference

        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return markdown
