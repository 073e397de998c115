"""Core's own plugin: the built-in embedders and summariser, registered like any other plugin."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memento_core._hook_markers import hookimpl

if TYPE_CHECKING:
    from memento_core._summarize import Summarizer
    from memento_core.embedding import Embedder


def _onnx(**options: Any) -> Embedder:
    from memento_core._onnx_embedding import OnnxEmbedder

    return OnnxEmbedder(**options)


def _sentence_transformers(**options: Any) -> Embedder:
    from memento_core.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(**options)


def _openai_compatible(**options: Any) -> Embedder:
    from memento_core._remote_embedding import OpenAICompatibleEmbedder

    return OpenAICompatibleEmbedder(**options)


def _extractive(**options: Any) -> Summarizer:
    from memento_core._summarize import ExtractiveSummarizer

    return ExtractiveSummarizer(**options)


@hookimpl
def memento_register_embedders(register: Callable[[str, Callable[..., Embedder]], None]) -> None:
    register("onnx", _onnx)
    register("sentence-transformers", _sentence_transformers)
    register("openai-compatible", _openai_compatible)


@hookimpl
def memento_register_summarizers(
    register: Callable[[str, Callable[..., Summarizer]], None],
) -> None:
    register("extractive", _extractive)
