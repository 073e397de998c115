"""The default embedder: all-MiniLM-L6-v2 exported to ONNX, run by ONNX Runtime.

The model files ship in the ``memento-minilm-onnx`` package (exported once from the same weights
sentence-transformers loads), so embedding needs neither torch nor a download. The fp32 export
gives the sentence-transformers vectors (cosine agreement ~1e-6), so it records the same
embedder name and opens the same stores; the int8 export is smaller and faster, gives slightly
different vectors, and records a name of its own.

onnxruntime and tokenizers load on the first embedding call, never at import time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memento_core.errors import InvalidInput, MissingDependency

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]  # as in embedding.py, which imports this module

ONNX_MODEL = "all-MiniLM-L6-v2"
ONNX_INT8_MODEL = "all-MiniLM-L6-v2-int8"
# Model id -> the file in the data package. The hub-style name of the default means the same.
_FILES = {
    ONNX_MODEL: "model.onnx",
    "sentence-transformers/all-MiniLM-L6-v2": "model.onnx",
    ONNX_INT8_MODEL: "model-int8.onnx",
}
DIMENSION = 384
# sentence-transformers' max_seq_length for this model: longer texts are cut, as there.
MAX_TOKENS = 256
BATCH_TOKENS = 512
"""A batch holds at most this many tokens, padding included (and ``batch_size`` texts). On
LoCoMo's turns, one thread: 87.0 texts/s, against 71.0 in batches of 64 texts (padded to their
longest), and 78.7 handed over 52 at a time (``benchmarks/results/embedders.md``). Padding
does not change a vector: the attention mask hides it."""


def onnx_models() -> tuple[str, ...]:
    """The model names ``OnnxEmbedder`` runs."""
    return tuple(_FILES)


def bundled_onnx_dir() -> Path:
    """The directory of the exported model and its ``tokenizer.json``."""
    try:
        import memento_minilm_onnx
    except ImportError as err:
        raise MissingDependency("memento-minilm-onnx", "the default embedding model") from err
    return Path(memento_minilm_onnx.model_dir())


INT8_EXTRA = "memento-core[int8]"


def int8_model_file() -> Path:
    """The int8 export: from the ``memento-minilm-onnx-int8`` package (the ``[int8]`` extra), or
    beside the fp32 model in a source checkout of ``memento-minilm-onnx``."""
    places = []
    try:
        import memento_minilm_onnx_int8
    except ImportError:
        pass
    else:
        places.append(Path(memento_minilm_onnx_int8.model_dir()))
    places.append(bundled_onnx_dir())
    for place in places:
        if (place / _FILES[ONNX_INT8_MODEL]).is_file():
            return place / _FILES[ONNX_INT8_MODEL]
    raise MissingDependency(INT8_EXTRA, "all-MiniLM-L6-v2-int8")


class _Runtime:
    """One loaded model: the ONNX Runtime session and the tokenizer, shared by embedders."""

    def __init__(self, model_file: Path, tokenizer_file: Path, threads: int | None) -> None:
        try:
            import onnxruntime
        except ImportError as err:
            raise MissingDependency("onnxruntime", "embedding text") from err
        try:
            from tokenizers import Tokenizer
        except ImportError as err:
            raise MissingDependency("tokenizers", "embedding text") from err
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()  # batches are padded here, each to its own longest text
        self.tokenizer = tokenizer

    def encode(self, texts: Sequence[str], batch_size: int) -> Vectors:
        import numpy as np

        # sentence-transformers strips each text before tokenising; so do we, to agree with it.
        encodings = self.tokenizer.encode_batch([t.strip() for t in texts])
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(-lengths, kind="stable")  # longest first: little padding per batch
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        start = 0
        while start < len(order):
            width = int(lengths[order[start]])
            rows = order[start : start + max(1, min(batch_size, BATCH_TOKENS // width))]
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for i, row in enumerate(rows):
                n = int(lengths[row])
                ids[i, :n] = encodings[row].ids
                mask[i, :n] = 1
            (vectors,) = self.session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            out[rows] = vectors
            start += len(rows)
        return out


_RUNTIMES: dict[tuple[str, int | None], _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def _shared_runtime(model_file: Path, tokenizer_file: Path, threads: int | None) -> _Runtime:
    key = (str(model_file), threads)
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get(key)
        if runtime is None:
            runtime = _RUNTIMES[key] = _Runtime(model_file, tokenizer_file, threads)
        return runtime


def _default_threads() -> int | None:
    """``OMP_NUM_THREADS`` when set (the same cap torch honours), else ONNX Runtime's choice."""
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime: ``"all-MiniLM-L6-v2"`` (fp32, the default, the same
    vectors as sentence-transformers) or ``"all-MiniLM-L6-v2-int8"`` (smaller, faster, recall a
    little lower, a store of its own).

    Embedders of one process with the same model and thread count share the loaded model.
    ``threads`` defaults to ``$OMP_NUM_THREADS`` when set, else ONNX Runtime's default.
    """

    def __init__(
        self, model: str = ONNX_MODEL, *, batch_size: int = 64, threads: int | None = None
    ) -> None:
        if model not in _FILES:
            known = ", ".join(repr(m) for m in (ONNX_MODEL, ONNX_INT8_MODEL))
            raise InvalidInput(
                f"OnnxEmbedder has no model {model!r} (it has {known}); for other models use "
                "SentenceTransformerEmbedder (pip install 'memento-core[torch]')"
            )
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, got {batch_size}")
        self._model = model
        self._batch_size = batch_size
        self._threads = threads if threads is not None else _default_threads()
        self._runtime: _Runtime | None = None

    @property
    def name(self) -> str:
        return ONNX_INT8_MODEL if self._model == ONNX_INT8_MODEL else ONNX_MODEL

    @property
    def dimension(self) -> int:
        return DIMENSION

    def _load(self) -> _Runtime:
        runtime = self._runtime
        if runtime is None:
            directory = bundled_onnx_dir()
            model_file = directory / _FILES[self._model]
            if self._model == ONNX_INT8_MODEL:
                model_file = int8_model_file()
            runtime = self._runtime = _shared_runtime(
                model_file, directory / "tokenizer.json", self._threads
            )
        return runtime

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return self._load().encode(texts, self._batch_size)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector
