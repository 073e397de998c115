"""Counting tokens: the ``TokenCounter`` protocol and the default, a real WordPiece tokenizer.

The default counts with the tokenizer of the bundled embedding model (all-MiniLM-L6-v2's
uncased WordPiece, 30,522 pieces), read from its ``tokenizer.json`` by the ``tokenizers``
package: offline, no torch, loaded on first use. It is not your LLM's tokenizer; for budgets
that must match a hosted model exactly, plug in a counter built on that model's tokenizer
(for OpenAI models, ``tiktoken`` — which downloads its encodings, so it is not the default).

A message costs its text tokens, plus for each tool call the tokens of its name and of its
arguments as JSON, plus the sender's ``name`` if it has one, plus ``MESSAGE_OVERHEAD`` (4)
tokens for the role and the framing chat formats wrap around every message (OpenAI's documented
figure is 3–4 per message).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memento_core._messages import Message
from memento_core.errors import MissingDependency

__all__ = [
    "MESSAGE_OVERHEAD",
    "TokenCounter",
    "WordPieceCounter",
    "count_message",
    "default_counter",
]

MESSAGE_OVERHEAD = 4


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens in text. ``count`` must be deterministic and additive enough that a text
    never counts fewer tokens than any of its prefixes."""

    def count(self, text: str) -> int:
        """The number of tokens in ``text`` (0 for the empty string)."""
        ...


class WordPieceCounter:
    """Counts WordPiece tokens with a ``tokenizer.json`` (default: the bundled MiniLM's)."""

    def __init__(self, tokenizer_file: str | Path | None = None) -> None:
        self._file = tokenizer_file
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._tokenizer is None:
                try:
                    from tokenizers import Tokenizer
                except ImportError as err:
                    raise MissingDependency("tokenizers", "counting tokens") from err
                path = self._file
                if path is None:
                    from memento_core._onnx_embedding import bundled_onnx_dir

                    path = bundled_onnx_dir() / "tokenizer.json"
                tokenizer = Tokenizer.from_file(str(path))
                # The file is set up for the model: cut at 128 tokens and padded. Count it all.
                tokenizer.no_truncation()
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            return self._tokenizer

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._load().encode(text, add_special_tokens=False).ids)


_default: WordPieceCounter | None = None
_default_lock = threading.Lock()


def default_counter() -> TokenCounter:
    """One shared ``WordPieceCounter`` for the process (the tokenizer loads once)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = WordPieceCounter()
        return _default


def count_message(message: Message, counter: TokenCounter | None = None) -> int:
    """Tokens a message takes in a prompt: text + tool calls + name + ``MESSAGE_OVERHEAD``."""
    chosen = counter or default_counter()
    total = MESSAGE_OVERHEAD + chosen.count(message.content)
    for call in message.tool_calls:
        total += chosen.count(call.name)
        total += chosen.count(json.dumps(call.arguments, ensure_ascii=False))
    if message.name:
        total += chosen.count(message.name)
    return total
