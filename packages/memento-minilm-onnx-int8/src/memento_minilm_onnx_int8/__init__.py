"""all-MiniLM-L6-v2 exported to ONNX with int8 weights for Memento: ``model-int8.onnx`` in the
directory ``model_dir()`` returns (the tokenizer is ``memento_minilm_onnx``'s)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["model_dir"]


def model_dir() -> Path:
    """The directory holding ``model-int8.onnx``."""
    return Path(__file__).resolve().parent
