"""The cross-adapter conformance suite: core and every adapter found through the ``memento``
entry points, run through ``memento_core.testing`` on one shared store per mode.

A new adapter joins by registering an ``AdapterInfo`` with a ``conformance_driver``; nothing
here names it. ``test_every_installed_adapter_takes_part`` makes sure an installed adapter
cannot drop out silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

import pytest

from memento_core import Memento
from memento_core.plugins import adapters, provided_by
from memento_core.testing import (
    SCENARIOS,
    ConformanceDriver,
    ConformanceError,
    CoreDriver,
    Hit,
    check_cross_recall,
    check_forgetting,
    check_scope_isolation,
)

if TYPE_CHECKING:
    from conftest import StoreFactory


@pytest.fixture(scope="module")
def shared(module_store_factory: StoreFactory) -> Iterator[Memento]:
    """One store for every driver; usage is not tracked, so recalling leaves scores alone."""
    with module_store_factory.open("conformance", track_usage=False) as mem:
        yield mem


@pytest.fixture(scope="module")
def drivers(shared: Memento) -> list[ConformanceDriver]:
    found: list[ConformanceDriver] = [CoreDriver(shared)]
    for name, info in sorted(adapters().items()):
        driver = info.load_driver()(shared)
        assert isinstance(driver, ConformanceDriver), f"{name}'s driver lacks protocol methods"
        found.append(driver)
    return found


def test_every_installed_adapter_takes_part(drivers: list[ConformanceDriver]) -> None:
    # Adapters are the installed plugins (entry points of the ``memento`` group); other
    # packages of the project (the sendmsg gateway) are applications, not adapters.
    # A plugin that registers embedders or summarizers only (memento-multilingual) is no adapter.
    installed = {
        entry.name for entry in entry_points(group="memento") if not provided_by(entry.name)
    }
    assert installed, "no adapter package is installed: the suite would compare core with itself"
    assert {d.name for d in drivers} == {"core", *installed}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_holds_for_every_adapter(
    scenario: str, drivers: list[ConformanceDriver], shared: Memento
) -> None:
    if scenario == "hotwords":
        SCENARIOS[scenario](drivers, shared)
    else:
        SCENARIOS[scenario](drivers)


class _Misbehaving(CoreDriver):
    """Core, with one deliberate fault, to show each scenario can fail."""

    def __init__(self, mem: Memento, fault: str) -> None:
        super().__init__(mem)
        self.name = f"faulty-{fault}"
        self.fault = fault

    def recall(self, query: str, *, user_id: str, limit: int) -> list[Hit]:
        hits = super().recall(query, user_id=user_id, limit=limit)
        if self.fault == "reorder":
            return hits[::-1]
        if self.fault == "rescore":
            return [Hit(h.memory_id, h.score * 0.9) for h in hits]
        if self.fault == "leak":
            return hits + [Hit(m.id, 0.0) for m in self.mem.items() if m.scope.user_id != user_id]
        return hits

    def forget(self, memory_id: str, *, user_id: str) -> None:
        if self.fault != "keep":
            super().forget(memory_id, user_id=user_id)


@pytest.mark.parametrize(
    ("fault", "scenario"),
    [
        ("reorder", check_cross_recall),
        ("rescore", check_cross_recall),
        ("leak", check_scope_isolation),
        ("keep", check_forgetting),
    ],
)
def test_a_deviating_driver_is_caught(fault: str, scenario: object, shared: Memento) -> None:
    drivers = [CoreDriver(shared), _Misbehaving(shared, fault)]
    with pytest.raises(ConformanceError):
        scenario(drivers)  # type: ignore[operator]
