"""all-MiniLM-L6-v2 exported to ONNX for Memento: ``model.onnx`` (fp32), ``model-int8.onnx``
(int8 weights) and ``tokenizer.json``, in the directory ``model_dir()`` returns."""

from __future__ import annotations

from pathlib import Path

__all__ = ["model_dir"]


def model_dir() -> Path:
    """The directory holding the model files."""
    return Path(__file__).resolve().parent
