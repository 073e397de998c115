"""The embedders: ONNX Runtime (the default, fp32 and int8) against sentence-transformers on the
same all-MiniLM-L6-v2 weights, and stores built with one opened with the other."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from memento_core import (
    Embedder,
    EmbedderMismatch,
    InvalidInput,
    Memento,
    MemoryDraft,
    OnnxEmbedder,
    Scope,
    SentenceTransformerEmbedder,
    embedder_for,
)

if TYPE_CHECKING:
    from memento_core.embedding import Vectors

ANN = Scope(user_id="ann")
LONG = "the lighthouse keeper counted the ships " * 60  # well past the 256-token cut
TEXTS = [
    "Alice takes her coffee black.",
    "  surrounding spaces are stripped first  ",
    "",
    "x",
    "도손의 해안 마을에서 커피를 마셨다",
    LONG,
    "We moved the database to MariaDB last Tuesday.",
]


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    """The same model on sentence-transformers (the ``[torch]`` extra), loaded once here."""
    return SentenceTransformerEmbedder()


@pytest.fixture(scope="module")
def int8() -> OnnxEmbedder:
    return OnnxEmbedder("all-MiniLM-L6-v2-int8")


def test_the_default_is_onnx_and_agrees_with_sentence_transformers(
    embedder: Embedder, torch_embedder: SentenceTransformerEmbedder
) -> None:
    assert isinstance(embedder, OnnxEmbedder)
    assert (embedder.name, embedder.dimension) == (torch_embedder.name, torch_embedder.dimension)
    onnx = embedder.embed_documents(TEXTS)
    torch = torch_embedder.embed_documents(TEXTS)
    assert onnx.dtype == np.float32 and onnx.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(onnx * torch, axis=1))) > 0.99999
    assert np.max(np.abs(onnx - torch)) < 1e-5


def test_texts_past_the_cut_embed_as_their_first_256_tokens(embedder: Embedder) -> None:
    longer = LONG + "and then something else entirely about volcanoes " * 20
    np.testing.assert_allclose(embedder.embed_query(longer), embedder.embed_query(LONG), atol=1e-6)


def test_batches_come_back_in_the_order_given(embedder: Embedder) -> None:
    one_by_one = np.stack([embedder.embed_query(t) for t in TEXTS])
    small_batches = OnnxEmbedder(batch_size=2).embed_documents(TEXTS)
    reversed_rows = embedder.embed_documents(TEXTS[::-1])[::-1]
    np.testing.assert_allclose(small_batches, one_by_one, atol=1e-5)
    np.testing.assert_allclose(reversed_rows, one_by_one, atol=1e-5)


def test_many_texts_of_mixed_lengths_embed_as_each_would_alone(embedder: Embedder) -> None:
    # Batches are cut by tokens, padding included: long texts go a few at a time, short ones
    # many; every row must still be its own text's vector, in the order given.
    texts = [f"note {n}: " + "the tide came in over the rocks " * (n % 9) for n in range(60)]
    texts[17] = LONG
    one_by_one = np.stack([embedder.embed_query(t) for t in texts])
    np.testing.assert_allclose(embedder.embed_documents(texts), one_by_one, atol=1e-5)


def test_no_texts_give_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.embed_documents([]).shape == (0, 384)


def test_int8_is_close_but_a_model_of_its_own(embedder: Embedder, int8: OnnxEmbedder) -> None:
    assert int8.name == "all-MiniLM-L6-v2-int8" and int8.name != embedder.name
    quantised = int8.embed_documents(TEXTS)
    exact = embedder.embed_documents(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(quantised, axis=1), 1.0, atol=1e-5)
    agreement = np.sum(quantised * exact, axis=1)
    assert float(agreement.min()) > 0.95
    assert not np.allclose(quantised, exact, atol=1e-4)  # really the other model file


def test_embedders_of_one_model_share_the_loaded_model(embedder: Embedder) -> None:
    fresh = OnnxEmbedder()  # as a second memory of the application makes one
    assert np.array_equal(fresh.embed_query("coffee"), embedder.embed_query("coffee"))
    assert fresh._load() is OnnxEmbedder()._load()


def test_embedder_for_picks_onnx_for_minilm_and_torch_for_other_models() -> None:
    assert isinstance(embedder_for("all-MiniLM-L6-v2"), OnnxEmbedder)
    assert isinstance(embedder_for("sentence-transformers/all-MiniLM-L6-v2"), OnnxEmbedder)
    assert embedder_for("all-MiniLM-L6-v2-int8").name == "all-MiniLM-L6-v2-int8"
    by_path = embedder_for(Path("/models/some-other-model"))  # nothing loads until used
    assert isinstance(by_path, SentenceTransformerEmbedder) and by_path.name == "some-other-model"
    by_name = embedder_for("paraphrase-MiniLM-L3-v2")
    assert isinstance(by_name, SentenceTransformerEmbedder)
    assert by_name.name == "paraphrase-MiniLM-L3-v2"


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"model": "all-MiniLM-L12-v2"}, "OnnxEmbedder has no model 'all-MiniLM-L12-v2'"),
        ({"batch_size": 0}, "batch_size must be at least 1, got 0"),
    ],
)
def test_a_bad_onnx_option_is_a_one_line_error(options: dict[str, object], says: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        OnnxEmbedder(**options)  # type: ignore[arg-type]
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_store_built_on_torch_opens_with_onnx_and_back(
    tmp_path: Path, embedder: Embedder, torch_embedder: SentenceTransformerEmbedder
) -> None:
    path = tmp_path / "store"
    with Memento.open(path, embedder=torch_embedder) as store:
        coffee = store.remember("Alice takes her coffee black.", scope=ANN)
        store.remember("The deploy runs every Friday at noon.", scope=ANN)
    with Memento.open(path, embedder=embedder) as store:
        assert store.recall("how does Alice like her coffee?", scope=ANN)[0].item.id == coffee
        tea = store.remember("Bob drinks green tea.", scope=ANN)
    with Memento.open(path, embedder=torch_embedder) as store:
        assert store.recall("what does Bob drink?", scope=ANN)[0].item.id == tea
        assert store.stats().memories == 3


def test_an_int8_embedder_cannot_open_an_fp32_store_and_harms_nothing(
    tmp_path: Path, embedder: Embedder, int8: OnnxEmbedder
) -> None:
    path = tmp_path / "store"
    with Memento.open(path, embedder=embedder) as store:
        coffee = store.remember("Alice takes her coffee black.", scope=ANN)
    with pytest.raises(EmbedderMismatch) as caught:
        Memento.open(path, embedder=int8)
    assert "all-MiniLM-L6-v2-int8" in str(caught.value)
    with Memento.open(path, embedder=embedder) as store:
        assert store.get(coffee).content == "Alice takes her coffee black."
        assert store.stats().memories == 1


def test_an_int8_store_recalls_with_int8(tmp_path: Path, int8: OnnxEmbedder) -> None:
    with Memento.open(tmp_path / "store", embedder=int8) as store:
        coffee = store.remember("Alice takes her coffee black.", scope=ANN)
        store.remember("The deploy runs every Friday at noon.", scope=ANN)
        assert store.recall("how does Alice like her coffee?", scope=ANN)[0].item.id == coffee


class _Asymmetric:
    """The real model with e5-style prefixes: a question embeds unlike a stored text."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.queries: list[str] = []

    @property
    def name(self) -> str:
        return "minilm-asymmetric"

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed_documents([f"passage: {t}" for t in texts])

    def embed_query(self, text: str) -> Vectors:
        self.queries.append(text)
        return self.inner.embed_query(f"query: {text}")


def test_recall_embeds_the_question_with_the_models_query_embedding(
    embedder: Embedder, tmp_path: Path
) -> None:
    """An asymmetric model (e5's "query: "/"passage: ") gets its query embedding for a question,
    even when a stored memory has the question's exact text, and once per distinct question."""
    model = _Asymmetric(embedder)
    question = "Where does Alice keep her bicycle?"
    with Memento.open(tmp_path / "s", embedder=model) as mem:
        texts = [question, "Alice keeps her bicycle in the shed."]
        mem.remember_many([MemoryDraft(content=t, scope=ANN) for t in texts])
        first = mem.recall(question, scope=ANN, limit=2)
        again = mem.recall(question, scope=ANN, limit=2)
    assert model.queries == [question]  # the model's own query embedding, cached once
    assert [r.item.id for r in first] == [r.item.id for r in again]
