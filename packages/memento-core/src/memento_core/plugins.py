"""Plugins: pluggy hooks, the ``memento`` entry-point group, and the registries built from them.

This module is the only place that calls hooks; the rest of core uses its typed functions.
Plugins load lazily, once, on first use. ``MEMENTO_BLOCK_PLUGINS=name,name`` blocks plugins by
their entry-point name (or ``builtins`` for core's own). Core's built-ins register through the
same hooks as third-party plugins.

A plugin that fails to import is reported once (a ``PluginLoadWarning``), listed by
``broken()`` and ``memento-core plugins``, and skipped: the other plugins keep working. Plugin
modules should import their framework lazily — the adapters' plugin modules import nothing
beyond ``memento_core``, so a first ``remember`` loads no agent framework.

A plugin is a module listed under ``[project.entry-points.memento]`` with functions decorated
``@memento_core.plugins.hookimpl`` named after the hooks in ``MementoHooks``.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import entry_points, version
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

from memento_core._hook_markers import PROJECT, hookspec
from memento_core._hook_markers import hookimpl as hookimpl  # plugins mark their hooks with it
from memento_core.errors import InvalidInput

if TYPE_CHECKING:
    from memento_core._model import MemoryItem, Scope
    from memento_core._ranking import Recalled
    from memento_core._summarize import Summarizer
    from memento_core.embedding import Embedder

ENTRY_POINT_GROUP = "memento"
BLOCK_VARIABLE = "MEMENTO_BLOCK_PLUGINS"
BUILTINS = "builtins"


class PluginLoadWarning(UserWarning):
    """An installed plugin could not be loaded; it was skipped."""


class Observed(Protocol):
    """What the observer hooks receive: the ``Memento`` the event happened on (typed by what
    they may rely on here, so that this host does not import the façade)."""

    @property
    def location(self) -> str: ...


@dataclass(frozen=True)
class AdapterInfo:
    """A framework adapter, as its plugin describes it."""

    name: str
    framework: str
    package: str
    description: str
    conformance_driver: str | None = None
    """``module:callable`` taking a ``Memento`` and returning a ``memento_core.testing``
    driver, so the cross-adapter conformance suite can run this adapter."""

    def load_driver(self) -> Callable[..., Any]:
        if not self.conformance_driver:
            raise LookupError(f"adapter {self.name!r} ships no conformance driver")
        module, _, attribute = self.conformance_driver.partition(":")
        factory: Callable[..., Any] = getattr(import_module(module), attribute)
        return factory


class MementoHooks:
    """The hook specifications. Implementations are called with keyword arguments only."""

    @hookspec
    def memento_register_adapters(self, register: Callable[[AdapterInfo], None]) -> None:
        """Called once when plugins load. Call ``register(AdapterInfo(...))`` for each framework
        adapter the plugin provides. Keep it cheap: import the framework lazily."""

    @hookspec
    def memento_register_embedders(
        self, register: Callable[[str, Callable[..., Embedder]], None]
    ) -> None:
        """Called once when plugins load. Call ``register(name, factory)``; ``factory(**options)``
        returns an ``Embedder``. ``memento_core.plugins.embedder(name)`` builds one."""

    @hookspec
    def memento_register_summarizers(
        self, register: Callable[[str, Callable[..., Summarizer]], None]
    ) -> None:
        """Called once when plugins load. Call ``register(name, factory)``; ``factory(**options)``
        returns a ``Summarizer`` (used by ``summarize_thread`` and ``sleep``)."""

    @hookspec
    def memento_on_remember(self, memento: Observed, items: list[MemoryItem]) -> None:
        """Called after memories were stored (new or replaced), with the stored items. An
        observer: the return value is ignored; an exception propagates to the caller."""

    @hookspec
    def memento_on_recall(
        self, memento: Observed, query: str, scope: Scope, results: list[Recalled]
    ) -> None:
        """Called after a recall with its results, best first. An observer."""

    @hookspec
    def memento_on_hotword(self, event: Any) -> None:
        """Called for every hotword event a detector emits (``memento_core.hotwords``). An
        observer; keep it fast — it runs on the streaming path."""


class _Registry:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.manager: pluggy.PluginManager | None = None
        self.adapters: dict[str, AdapterInfo] = {}
        self.embedders: dict[str, Callable[..., Embedder]] = {}
        self.summarizers: dict[str, Callable[..., Summarizer]] = {}
        self.providers: dict[str, str] = {}
        """``"embedder NAME"`` / ``"summarizer NAME"`` → the plugin that registered it."""
        self.distributions: dict[str, str] = {}
        self.broken: dict[str, str] = {}


_registry = _Registry()


def blocked_names() -> set[str]:
    return {name.strip() for name in os.environ.get(BLOCK_VARIABLE, "").split(",") if name.strip()}


def manager() -> pluggy.PluginManager:
    """The plugin manager, loading every plugin on first call (idempotent and thread-safe)."""
    with _registry.lock:
        if _registry.manager is None:
            _registry.manager = _load()
        return _registry.manager


def _load() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(MementoHooks)
    blocked = blocked_names()
    for name in blocked:
        pm.set_blocked(name)
    if BUILTINS not in blocked:
        from memento_core import _default_plugins as builtins

        pm.register(builtins, name=BUILTINS)
        _registry.distributions[BUILTINS] = f"memento-core {version('memento-core')}"
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in blocked or pm.has_plugin(entry.name):
            continue
        dist = entry.dist
        distribution = f"{dist.name} {dist.version}" if dist else "?"
        try:
            module = entry.load()
        except Exception as err:  # any import failure must not break the other plugins
            _skip(entry.name, distribution, f"{type(err).__name__}: {err}")
            continue
        pm.register(module, name=entry.name)
        _registry.distributions[entry.name] = distribution
    pm.check_pending()
    pm.hook.memento_register_adapters(register=_add_adapter)
    # Each plugin's implementation in the order pluggy calls them (the last registered first),
    # so that what each provides is known.
    for impl in reversed(pm.hook.memento_register_embedders.get_hookimpls()):
        impl.function(register=_add(_registry.embedders, f"{impl.plugin_name}:embedder"))
    for impl in reversed(pm.hook.memento_register_summarizers.get_hookimpls()):
        impl.function(register=_add(_registry.summarizers, f"{impl.plugin_name}:summarizer"))
    return pm


def _skip(name: str, distribution: str, reason: str) -> None:
    _registry.broken[name] = f"{distribution}: {reason}"
    warnings.warn(
        f"memento plugin {name!r} ({distribution}) failed to load and was skipped: {reason}",
        PluginLoadWarning,
        stacklevel=4,
    )


def _add_adapter(info: AdapterInfo) -> None:
    _registry.adapters[info.name] = info


def _add(table: dict[str, Any], owner: str) -> Callable[[str, Any], None]:
    plugin, _, kind = owner.partition(":")

    def register(name: str, factory: Any) -> None:
        table[name] = factory
        _registry.providers[f"{kind} {name}"] = plugin

    return register


def reset() -> None:
    """Forget loaded plugins so the next use loads them again (tests; after ``pip install``)."""
    with _registry.lock:
        _registry.manager = None
        _registry.adapters.clear()
        _registry.embedders.clear()
        _registry.summarizers.clear()
        _registry.providers.clear()
        _registry.distributions.clear()
        _registry.broken.clear()


def adapters() -> dict[str, AdapterInfo]:
    manager()
    return dict(_registry.adapters)


def embedder(name: str, **options: Any) -> Embedder:
    manager()
    try:
        factory = _registry.embedders[name]
    except KeyError:
        known = ", ".join(sorted(_registry.embedders)) or "none"
        raise LookupError(f"no embedder named {name!r} is registered (known: {known})") from None
    return factory(**options)


MULTILINGUAL_EXTRA = "memento-core[multilingual]"


def named_embedder(name: str, **options: Any) -> Embedder:
    """The embedder registered under ``name`` by a plugin (``onnx``, ``sentence-transformers``,
    ``multilingual`` with the ``[multilingual]`` extra, ...); an unknown name is
    ``InvalidInput`` listing the known ones."""
    try:
        return embedder(name, **options)
    except LookupError as err:
        hint = ""
        if name.startswith("multilingual"):
            hint = f"; install it with: pip install {MULTILINGUAL_EXTRA!r}"
        raise InvalidInput(f"{err}{hint}") from None


def registered_for(recorded: str, dimension: int) -> Embedder | None:
    """A registered embedder that records ``recorded`` (a store's embedder name) with this
    dimension, built with its default options; None when no installed plugin provides one.
    Building an embedder loads no model, so this costs little."""
    for name in registered_names()["embedders"]:
        try:
            candidate = embedder(name)
            # The name first: a remote embedder learns its dimension by asking its server.
            if candidate.name == recorded and candidate.dimension == dimension:
                return candidate
        except Exception:  # a plugin that needs options (a URL, a key) is not this store's
            continue
    return None


def summarizer(name: str = "extractive", **options: Any) -> Summarizer:
    manager()
    try:
        factory = _registry.summarizers[name]
    except KeyError:
        known = ", ".join(sorted(_registry.summarizers)) or "none"
        raise LookupError(f"no summarizer named {name!r} is registered (known: {known})") from None
    return factory(**options)


def installed() -> dict[str, str]:
    """Loaded plugins: entry-point name → "distribution version"."""
    manager()
    return dict(_registry.distributions)


def provided_by(plugin: str) -> list[str]:
    """What a loaded plugin registered: ``"embedder NAME"``, ``"summarizer NAME"``, sorted."""
    manager()
    return sorted(what for what, owner in _registry.providers.items() if owner == plugin)


def broken() -> dict[str, str]:
    """Plugins that failed to load: entry-point name → "distribution version: error"."""
    manager()
    return dict(_registry.broken)


def registered_names() -> dict[str, list[str]]:
    manager()
    return {
        "adapters": sorted(_registry.adapters),
        "embedders": sorted(_registry.embedders),
        "summarizers": sorted(_registry.summarizers),
    }


def notify_remember(memento: Observed, items: list[MemoryItem]) -> None:
    manager().hook.memento_on_remember(memento=memento, items=items)


def notify_recall(memento: Observed, query: str, scope: Scope, results: list[Recalled]) -> None:
    manager().hook.memento_on_recall(memento=memento, query=query, scope=scope, results=results)


def notify_hotword(event: Any) -> None:
    manager().hook.memento_on_hotword(event=event)
