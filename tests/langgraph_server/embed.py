"""The embed function of the reference server's built-in store: the MiniLM model Memento uses,
so both stores rank with the same vectors."""

from __future__ import annotations

from collections.abc import Sequence

from memento_core import embedder_for

_model = embedder_for("all-MiniLM-L6-v2")


def embed(texts: Sequence[str]) -> list[list[float]]:
    return [[float(x) for x in row] for row in _model.embed_documents(list(texts))]
