"""Memento's exceptions: one tree, so callers can catch everything with ``MementoError``.

Leaves also subclass the builtin that matches their meaning, so code that already
catches ``ValueError`` or ``KeyError`` keeps working::

    MementoError
    ├── InvalidInput (ValueError)
    │   ├── InvalidContent
    │   ├── InvalidScope
    │   ├── InvalidFilter
    │   ├── InvalidImport
    │   └── InvalidHotwords
    ├── MemoryNotFound (KeyError)
    ├── NotOwner (PermissionError)
    ├── StoreError (RuntimeError)
    │   ├── NotAMementoStore
    │   ├── StoreNotFound (FileNotFoundError)
    │   ├── EmbedderMismatch
    │   ├── StoreUnavailable
    │   ├── StoreLocked
    │   └── ReadOnlyStore (PermissionError)
    ├── EmbeddingFailed (RuntimeError)
    └── MissingDependency (ImportError)
"""

from __future__ import annotations


class MementoError(Exception):
    """Base of every error Memento raises on purpose."""


class InvalidInput(MementoError, ValueError):
    """A value passed to Memento is malformed; nothing was stored."""


class InvalidContent(InvalidInput):
    """Memory content that is empty, too large, not text, or not valid Unicode."""


class InvalidScope(InvalidInput):
    """A scope field (user, agent, project, session) that is not a plain, short string."""


class InvalidFilter(InvalidInput):
    """A recall filter naming an unknown field or trying to pass an operator as a value."""


class InvalidImport(InvalidInput):
    """An import file line that is not a Memento NDJSON record."""

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


class InvalidHotwords(InvalidInput):
    """A hotword set that is malformed or beyond the documented limits; nothing was built.

    ``uid`` names the offending entry when there is one.
    """

    def __init__(self, message: str, *, uid: str | None = None) -> None:
        super().__init__(message if uid is None else f"hotwords of {uid!r}: {message}")
        self.uid = uid


class MemoryNotFound(MementoError, KeyError):
    """No live memory has this id (or the caller may not see it)."""

    def __init__(self, memory_id: str) -> None:
        super().__init__(memory_id)
        self.memory_id = memory_id

    def __str__(self) -> str:
        return f"no memory with id {self.memory_id!r}"


class NotOwner(MementoError, PermissionError):
    """The caller may see this memory (or session) but it belongs to another user; only its
    owner may change or delete it. Nothing was changed."""

    def __init__(self, what: str, action: str) -> None:
        super().__init__(f"{what} belongs to another user; only its owner can {action} it")
        self.what = what
        self.action = action


class StoreError(MementoError, RuntimeError):
    """The store cannot be opened or used."""


class NotAMementoStore(StoreError):
    """The path or server holds data that is not a Memento store."""


class StoreNotFound(StoreError, FileNotFoundError):
    """No store at the path, and none may be created there (a read-only open); nothing was
    created. ``path`` is where it was looked for."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class EmbedderMismatch(StoreError):
    """The store was built with another embedding model or dimension."""

    def __init__(
        self, *, stored: str, stored_dimension: int, given: str, given_dimension: int
    ) -> None:
        super().__init__(
            f"this store was built with embedder {stored!r} ({stored_dimension} dimensions) "
            f"but was opened with {given!r} ({given_dimension} dimensions); open it with the "
            "same embedder, or re-embed the store into the new space "
            "(`memento-core reembed --embedder NAME`)"
        )
        self.stored = stored
        self.stored_dimension = stored_dimension
        self.given = given
        self.given_dimension = given_dimension


class StoreUnavailable(StoreError):
    """The Chroma server did not answer, or the data directory cannot be written."""


class StoreLocked(StoreError):
    """An embedded store that another process holds open for writing.

    Chroma's embedded mode keeps vector indexes in each process's memory, so a second writing
    process would silently lose the first one's vectors. ``holder`` says who holds it.
    """

    def __init__(self, path: str, holder: str) -> None:
        super().__init__(
            f"the store {path} is open for writing in another process ({holder}). "
            "Open it read-only (Memento.open(path, read_only=True); CLI --read-only), or share "
            f"it between processes through a Chroma server (chroma run --path {path}, then "
            "Memento.open(url=...))"
        )
        self.path = path
        self.holder = holder


class ReadOnlyStore(StoreError, PermissionError):
    """A write to a store opened with ``read_only=True``; nothing was changed."""


class EmbeddingFailed(MementoError, RuntimeError):
    """The embedding model or service could not embed the texts (a remote service down, or
    answering something that is not one usable vector per text). The write that needed them
    stored nothing."""


class MissingDependency(MementoError, ImportError):
    """An optional package is needed for this feature."""

    def __init__(self, package: str, feature: str) -> None:
        super().__init__(f"{feature} needs the {package!r} package: pip install {package}")
        self.package = package
