"""A cheap, deterministic embedder for tests that run in a child process.

Loading the real model takes seconds; a child that must start fast uses this instead, and the
parent reopens the store with the same class (same name and dimension, so no EmbedderMismatch).
It is a real embedder — a bag of hashed words — just not a good one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DIMENSION = 32


class HashEmbedder:
    """Each word adds ±1 to a bucket chosen by its hash; rows are L2-normalised."""

    name = "test-hash-embedder"
    dimension = DIMENSION

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in re.findall(r"\w+", text.casefold()) or [text]:
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=2).digest()
                row[digest[0] % DIMENSION] += 1.0 if digest[1] & 1 else -1.0
            norm = float(np.linalg.norm(row))
            if norm == 0.0:  # words that cancel out: any fixed unit vector will do
                row[0], norm = 1.0, 1.0
            row /= norm
        return rows

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.embed_documents([text])[0]
