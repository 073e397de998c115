"""Plugins: discovery through the ``memento`` entry points, core's built-ins registered through
the same hooks, lazy and idempotent loading, blocking by environment variable, validation of a
plugin's hooks, the observer hooks — and a meta-test that every hook is documented and called."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memento_core import Memento, MemoryDraft, Scope, plugins
from memento_core.hotwords import HotwordEvent
from memento_core.plugins import AdapterInfo, MementoHooks, hookimpl

ROOT = Path(__file__).resolve().parents[2]
HOOKS = sorted(name for name in vars(MementoHooks) if name.startswith("memento_"))
ADAPTERS = {"langgraph", "autogen", "mcp"}
# The MCP server's distribution is memento-mcp-server: memento-mcp on the index is someone else's.
DISTRIBUTIONS = {name: f"memento-{name}" for name in ADAPTERS} | {"mcp": "memento-mcp-server"}

called_hooks: set[str] = set()


@pytest.fixture(autouse=True, scope="module")
def _watch_hook_calls() -> Iterator[None]:
    """Record every hook called while this module runs, for the meta-test at its end."""
    undo = plugins.manager().add_hookcall_monitoring(
        lambda name, impls, kwargs: called_hooks.add(name), lambda *_: None
    )
    yield
    undo()


def _python(code: str, env: dict[str, str] | None = None) -> Any:
    """Run ``code`` in a fresh interpreter; it prints one JSON value, which is returned."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------ discovery


def test_builtins_and_every_adapter_register_through_the_hooks() -> None:
    names = plugins.registered_names()
    assert {"onnx", "sentence-transformers"} <= set(names["embedders"])
    assert "extractive" in names["summarizers"]
    assert set(names["adapters"]) >= ADAPTERS
    for name in ADAPTERS:
        info = plugins.adapters()[name]
        assert info.package == DISTRIBUTIONS[name] and info.conformance_driver
        assert callable(info.load_driver())
    installed = plugins.installed()
    assert installed["builtins"].startswith("memento-core ")
    assert all(installed[name].startswith(f"{DISTRIBUTIONS[name]} 0.") for name in ADAPTERS)


def test_registered_factories_build_what_they_name() -> None:
    summarizer = plugins.summarizer("extractive")
    assert hasattr(summarizer, "summarize")
    int8 = plugins.embedder("onnx", model="all-MiniLM-L6-v2-int8")
    assert (int8.name, int8.dimension) == ("all-MiniLM-L6-v2-int8", 384)
    with pytest.raises(LookupError, match=r"no embedder named 'nope'.*sentence-transformers"):
        plugins.embedder("nope")
    with pytest.raises(LookupError, match=r"no summarizer named 'nope'.*extractive"):
        plugins.summarizer("nope")


def test_an_adapter_without_a_driver_says_so() -> None:
    info = AdapterInfo(name="bare", framework="X", package="x", description="no driver")
    with pytest.raises(LookupError, match="'bare' ships no conformance driver"):
        info.load_driver()


def test_loading_is_lazy_and_idempotent() -> None:
    found = _python(
        """
        import json, sys
        import memento_core
        from memento_core import plugins
        lazy = plugins._registry.manager is None and "memento_langgraph" not in sys.modules
        first = plugins.manager()
        again = plugins.manager()
        before = plugins.registered_names()
        plugins.reset()
        after = plugins.registered_names()
        print(json.dumps([lazy, first is again, before == after, plugins.manager() is not first]))
        """
    )
    assert found == [True, True, True, True]


def test_an_environment_variable_blocks_named_plugins() -> None:
    names = _python(
        """
        import json, sys
        from memento_core import plugins
        print(json.dumps([plugins.registered_names(), sorted(plugins.installed()),
                          "memento_langgraph.plugin" in sys.modules]))
        """,
        env={plugins.BLOCK_VARIABLE: " langgraph, builtins, multilingual "},
    )
    registered, installed, imported = names
    assert "langgraph" not in registered["adapters"] and "autogen" in registered["adapters"]
    assert registered["embedders"] == [] and registered["summarizers"] == []
    assert not {"langgraph", "builtins", "multilingual"} & set(installed)
    assert imported is False  # a blocked plugin's module is never imported


def _third_party(tmp_path: Path, module: str, source: str) -> dict[str, str]:
    """A plugin installed the way pip would: a module plus a dist-info with its entry point."""
    site = tmp_path / "site"
    (site / f"{module}-1.2.3.dist-info").mkdir(parents=True)
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    dist = site / f"{module}-1.2.3.dist-info"
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.2.3\n")
    (dist / "entry_points.txt").write_text(f"[memento]\n{module} = {module}\n")
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def test_a_third_party_plugin_is_found_through_its_entry_point(tmp_path: Path) -> None:
    env = _third_party(
        tmp_path,
        "memento_echo",
        """
        from memento_core.plugins import hookimpl
        from memento_core._summarize import ExtractiveSummarizer

        @hookimpl
        def memento_register_summarizers(register):
            register("echo", lambda **options: ExtractiveSummarizer(**options))
        """,
    )
    found = _python(
        """
        import json
        from memento_core import plugins
        print(json.dumps([plugins.installed()["memento_echo"], plugins.registered_names()]))
        """,
        env,
    )
    assert found[0] == "memento_echo 1.2.3"
    assert "echo" in found[1]["summarizers"] and "extractive" in found[1]["summarizers"]


def test_a_misspelt_hook_fails_check_pending_with_its_name(tmp_path: Path) -> None:
    env = _third_party(
        tmp_path,
        "memento_typo",
        """
        from memento_core.plugins import hookimpl

        @hookimpl
        def memento_on_remembered(memento, items):
            pass
        """,
    )
    result = subprocess.run(
        [sys.executable, "-c", "from memento_core import plugins; plugins.manager()"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
        check=False,
    )
    assert result.returncode != 0
    assert "memento_on_remembered" in result.stderr and "memento_typo" in result.stderr


FRAMEWORKS = (
    "langgraph",
    "langchain_core",
    "llama_index",
    "autogen_core",
    "autogen_agentchat",
    "mcp",
)


def test_a_first_remember_and_recall_import_no_framework(tmp_path: Path) -> None:
    """Every adapter is installed here; discovering them must not import what they serve."""
    found = _python(
        f"""
        import json, sys
        from memento_core import Memento, plugins
        with Memento.open({str(tmp_path / "store")!r}) as mem:
            mem.remember("The wifi password is tulip-42.")
            hits = mem.recall("wifi password")
        frameworks = {FRAMEWORKS!r}
        loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set(frameworks))
        print(json.dumps([len(hits), sorted(plugins.adapters()), loaded]))
        """
    )
    hits, adapters, loaded = found
    assert hits == 1
    assert set(adapters) >= ADAPTERS | {"llamaindex"}  # discovered...
    assert loaded == []  # ...without importing a single framework


def test_adapter_packages_still_give_their_names_on_first_use() -> None:
    found = _python(
        """
        import json, sys
        import memento_langgraph
        before = "langgraph" in sys.modules
        from memento_langgraph import MementoStore
        print(json.dumps([before, "langgraph" in sys.modules, MementoStore.__name__,
                          "MementoStore" in dir(memento_langgraph)]))
        """
    )
    assert found == [False, True, "MementoStore", True]
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        import memento_langgraph

        memento_langgraph.Nope  # noqa: B018 - the attribute access is what is tested


def test_a_plugin_that_fails_to_import_is_reported_once_and_skipped(tmp_path: Path) -> None:
    env = _third_party(
        tmp_path,
        "memento_broken",
        """
        raise ImportError("memento_broken needs frameworkx>=9, found 8.1")
        """,
    )
    found = _python(
        f"""
        import json, warnings
        from memento_core import Memento, plugins
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with Memento.open({str(tmp_path / "store")!r}) as mem:
                first = mem.remember("Stored although a plugin is broken.")
                mem.remember("And a second time.")
                hits = [r.item.id for r in mem.recall("stored although broken")]
            names = plugins.registered_names()
        reported = [str(w.message) for w in caught if w.category is plugins.PluginLoadWarning]
        print(json.dumps([first in hits, names["adapters"], reported, plugins.broken(),
                          sorted(plugins.installed())]))
        """,
        env,
    )
    stored, adapters, reported, broken, installed = found
    assert stored
    assert set(adapters) >= ADAPTERS  # the others keep working
    assert len(reported) == 1
    assert "'memento_broken' (memento_broken 1.2.3)" in reported[0]
    assert "frameworkx>=9, found 8.1" in reported[0]
    assert broken == {
        "memento_broken": "memento_broken 1.2.3: ImportError: memento_broken needs frameworkx>=9, "
        "found 8.1"
    }
    assert "memento_broken" not in installed

    listing = subprocess.run(
        [sys.executable, "-m", "memento_core.cli", "plugins"],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "COLUMNS": "250"},
        timeout=300,
        check=False,
    )
    assert listing.returncode == 0, listing.stderr
    row = next(line for line in listing.stdout.splitlines() if "memento_broken" in line)
    assert "broken" in row and "ImportError" in row
    assert "langgraph" in listing.stdout  # the working plugins are listed as before
    assert listing.stderr.count("failed to load") == 1


def test_check_pending_passes_for_everything_installed() -> None:
    plugins.manager().check_pending()


# ------------------------------------------------------------------------ observers


class _Observer:
    def __init__(self) -> None:
        self.remembered: list[list[str]] = []
        self.recalled: list[tuple[str, list[str]]] = []
        self.hotwords: list[str] = []

    @hookimpl
    def memento_on_remember(self, memento: Memento, items: list[Any]) -> None:
        self.remembered.append([item.content for item in items])

    @hookimpl
    def memento_on_recall(
        self, memento: Memento, query: str, scope: Scope, results: list[Any]
    ) -> None:
        self.recalled.append((query, [r.item.id for r in results]))

    @hookimpl
    def memento_on_hotword(self, event: Any) -> None:
        if isinstance(event, HotwordEvent):
            self.hotwords.append(event.hotword_uid)


@pytest.fixture
def observer() -> Iterator[_Observer]:
    seen = _Observer()
    plugins.manager().register(seen, name="test-observer")
    yield seen
    plugins.manager().unregister(name="test-observer")


def test_observers_see_remember_recall_and_hotwords(mem: Memento, observer: _Observer) -> None:
    scope = Scope(user_id="ann")
    first = mem.remember("Ann's bike is in the blue shed.", scope=scope, hotwords=["blue shed"])
    mem.remember_many(
        [MemoryDraft("Ann likes rooibos tea.", scope=scope), MemoryDraft("Ann rows.")]
    )
    assert observer.remembered == [
        ["Ann's bike is in the blue shed."],
        ["Ann likes rooibos tea.", "Ann rows."],
    ]
    found = mem.recall("where is the bike?", scope=scope, limit=1)
    assert observer.recalled == [("where is the bike?", [found[0].item.id])]
    mem.hotword_detector().conversation("c1").feed_message("It is in the Blue  Shed.")
    assert observer.hotwords == [first]


def test_an_observer_that_raises_stops_the_call_but_not_what_was_stored(mem: Memento) -> None:
    class Failing:
        @hookimpl
        def memento_on_remember(self, memento: Memento, items: list[Any]) -> None:
            raise RuntimeError("audit log unavailable")

    plugins.manager().register(Failing(), name="failing-observer")
    try:
        with pytest.raises(RuntimeError, match="audit log unavailable"):
            mem.remember("Stored before the observers run.")
    finally:
        plugins.manager().unregister(name="failing-observer")
    assert [item.content for item in mem.items()] == ["Stored before the observers run."]


# ------------------------------------------------------------------------ the meta-test


def test_every_hook_is_documented_and_exercised() -> None:
    """Runs last in this module: each hook has a docstring, a README entry, and was called."""
    readme = (ROOT / "README.md").read_text()
    for name in HOOKS:
        assert (getattr(MementoHooks, name).__doc__ or "").strip(), f"{name} has no docstring"
        assert f"`{name}`" in readme, f"{name} is not documented in README.md"
    # Registration hooks run while plugins load, before any monitor: what they filled shows it.
    filled = {
        f"memento_register_{kind}" for kind, names in plugins.registered_names().items() if names
    }
    exercised = called_hooks | filled
    assert set(HOOKS) <= exercised, f"never exercised here: {set(HOOKS) - exercised}"
