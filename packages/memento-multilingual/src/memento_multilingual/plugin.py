"""memento-multilingual's plugin: registers the multilingual embedders by name.

Importing it loads no model: a factory builds an embedder, which loads (and hash-checks) its
weights on its first embedding call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memento_core.plugins import hookimpl

if TYPE_CHECKING:
    from memento_core.embedding import Embedder


def _ensemble(**options: Any) -> Embedder:
    from memento_multilingual._embedders import EnsembleEmbedder

    return EnsembleEmbedder(**options)


def _e5(**options: Any) -> Embedder:
    from memento_multilingual._embedders import E5Embedder

    return E5Embedder(**options)


def _use(**options: Any) -> Embedder:
    from memento_multilingual._embedders import UseEmbedder

    return UseEmbedder(**options)


@hookimpl
def memento_register_embedders(register: Callable[[str, Callable[..., Embedder]], None]) -> None:
    register("multilingual", _e5)
    register("multilingual-ensemble", _ensemble)
    register("multilingual-e5", _e5)
    register("multilingual-use", _use)
