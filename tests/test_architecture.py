"""The import rules of the monorepo, checked on the import graph (grimp, import-linter's engine).

- Adapters (and the examples' packages) use only the core's public API: no module of theirs
  imports a private core module (a dotted name with a segment starting with ``_``).
- No core module imports the façade (``memento_core._memento``), even under TYPE_CHECKING: only
  the package's ``__init__`` does. The work modules receive the engine.
- `lint-imports` (in `make test`) checks the rest: core imports no framework and its modules
  form no cycle (see ``[tool.importlinter]`` in pyproject.toml).
"""

from __future__ import annotations

import grimp
import pytest

ADAPTERS = (
    "memento_langgraph",
    "memento_llamaindex",
    "memento_autogen",
    "memento_mcp",
    "memento_inspector",
    "memento_multilingual",
)
FACADE = "memento_core._memento"
FRONT_ENDS = {"memento_core", "memento_core.cli", "memento_core.testing"}
"""Core's own clients of the façade: the package's ``__init__``, the command line and the
conformance scenarios. They use ``Memento`` as any application does; nothing imports them."""


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("memento_core", *ADAPTERS, include_external_packages=False)


def _private(module: str) -> bool:
    return module.startswith("memento_core.") and any(
        part.startswith("_") for part in module.split(".")[1:]
    )


def _lines(graph: grimp.ImportGraph, importer: str, imported: str) -> list[str]:
    return [
        f"{importer}:{d['line_number']}: {d['line_contents']}"
        for d in graph.get_import_details(importer=importer, imported=imported)
    ]


def test_adapters_import_only_the_public_core(graph: grimp.ImportGraph) -> None:
    offending = [
        line
        for adapter in ADAPTERS
        for module in sorted(graph.find_descendants(adapter) | {adapter})
        for imported in sorted(graph.find_modules_directly_imported_by(module))
        if _private(imported)
        for line in _lines(graph, module, imported)
    ]
    assert offending == [], "adapters import private core modules:\n" + "\n".join(offending)


def test_no_core_module_imports_the_facade(graph: grimp.ImportGraph) -> None:
    importers = {
        module
        for module in graph.find_modules_that_directly_import(FACADE)
        if module.startswith("memento_core") and module not in FRONT_ENDS
    }
    offending = [line for module in sorted(importers) for line in _lines(graph, module, FACADE)]
    assert offending == [], "core modules import the façade:\n" + "\n".join(offending)


def test_the_rules_see_a_violation(graph: grimp.ImportGraph) -> None:
    """The checks above look at real edges: the package's own __init__ imports the façade."""
    assert FACADE in graph.find_modules_directly_imported_by("memento_core")
    assert _private(FACADE) and not _private("memento_core.hotwords")
