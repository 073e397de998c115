"""Loading the graph to serve, and the key table, for the console command."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from langchain_core.runnables import Runnable

from memento_core import InvalidInput, Memento
from memento_gateway.keys import Space, StaticKeys

__all__ = ["load_keys", "load_runnable"]

_SPACE_FIELDS = {
    "project_id",
    "agent_id",
    "user_id",
    "usable",
    "return_voice",
    "system_prompt",
    "allow_empty_msg",
    "sentences",
    "chain_events",
    "recall_budget",
}


def load_runnable(target: str, mem: Memento) -> Runnable[Any, Any]:
    """``module:attr`` — a compiled graph or runnable, or a function that takes the open
    ``Memento`` and returns one (so the graph can use a ``MementoStore`` on the same store)."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise InvalidInput(f"expected module:attr, got {target!r}")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise InvalidInput(f"cannot import {module_name!r}: {err}") from err
    for name in attr.split("."):
        if not hasattr(found, name):
            raise InvalidInput(f"{module_name!r} has no attribute {attr!r}")
        found = getattr(found, name)
    if not isinstance(found, Runnable) and callable(found):
        factory: Callable[[Memento], Any] = found
        found = factory(mem)
    if not isinstance(found, Runnable):
        raise InvalidInput(f"{target} is a {type(found).__name__}, not a graph or runnable")
    return found


def load_keys(path: str | Path, default_graph: str, mem: Memento) -> StaticKeys:
    """A JSON key table: ``{"<api_key>": {"space_id": ..., "graph": "module:attr"?, ...}}``.

    Every other field is a ``Space`` field (``project_id``, ``usable``, ``return_voice``, …);
    ``graph`` defaults to the command's graph.
    """
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InvalidInput(f"cannot read the key table {str(path)!r}: {err}") from err
    if not isinstance(table, Mapping) or not table:
        raise InvalidInput(f"the key table {str(path)!r} must be a non-empty JSON object")
    graphs: dict[str, Runnable[Any, Any]] = {}
    spaces: dict[str, Space] = {}
    for key, entry in table.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("space_id"), str):
            raise InvalidInput(f"key {key[:4]}…: each entry needs a space_id")
        unknown = set(entry) - _SPACE_FIELDS - {"space_id", "graph"}
        if unknown:
            raise InvalidInput(f"key {key[:4]}…: unknown fields {sorted(unknown)}")
        target = entry.get("graph") or default_graph
        if target not in graphs:
            graphs[target] = load_runnable(target, mem)
        fields = {name: value for name, value in entry.items() if name in _SPACE_FIELDS}
        spaces[key] = Space(space_id=entry["space_id"], graph=graphs[target], **fields)
    return StaticKeys(spaces)
