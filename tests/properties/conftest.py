"""Hypothesis profiles for the property tests, and the stores they share.

Profiles (see ``README.md`` here):

- ``memento-ci`` (the default): each test runs the small number of examples it names, with no
  deadline (the machine is shared, and no assertion here is about time), derandomized: the same
  examples on every run, so CI is reproducible and a failure is a change, not luck.
- ``memento-fuzz``: chosen when ``MEMENTO_FUZZ_EXAMPLES`` is set; ``_prop_support.budget`` then
  scales every test to that many examples (store-bound tests to a share of it), with fresh
  random examples each run (``--hypothesis-seed=N`` repeats one).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, settings

from memento_core import Embedder, Memento
from memento_core.testing import HashEmbedder

_COMMON = {
    "deadline": None,
    # Store-backed tests share module-scoped stores on purpose (a fresh store per example
    # would be too slow), and the machine is busy: neither is a problem worth flagging.
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
}
settings.register_profile("memento-ci", **_COMMON, print_blob=True, derandomize=True)
settings.register_profile(
    "memento-fuzz",
    **_COMMON,
    print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)
settings.load_profile("memento-fuzz" if os.environ.get("MEMENTO_FUZZ_EXAMPLES") else "memento-ci")


@pytest.fixture(scope="module")
def hash_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memento]:
    """An embedded store on the hash embedder, without usage tracking, shared by a module."""
    with Memento.open(
        tmp_path_factory.mktemp("hash-store"), embedder=HashEmbedder(), track_usage=False
    ) as mem:
        yield mem


@pytest.fixture(scope="module")
def minilm_store(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Memento]:
    """An embedded store on the real MiniLM, shared by a module (tests use their own ids)."""
    with Memento.open(tmp_path_factory.mktemp("minilm-store"), embedder=embedder) as mem:
        yield mem
