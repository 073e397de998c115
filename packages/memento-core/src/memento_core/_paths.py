"""Where an embedded store lives when no path is given: one per-user directory for the library,
the command line and the MCP server, unless ``$MEMENTO_PATH`` names another."""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_DIRECTORY = "memento"


def user_data_dir() -> Path:
    """The per-user data directory for Memento, by the platform's convention: Linux and other
    Unix ``$XDG_DATA_HOME/memento`` (else ``~/.local/share/memento``), macOS
    ``~/Library/Application Support/memento``, Windows ``%LOCALAPPDATA%\\memento``."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / APP_DIRECTORY
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP_DIRECTORY
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    # The XDG spec says a relative value is invalid and must be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / APP_DIRECTORY


def default_store_path() -> Path:
    """``$MEMENTO_PATH`` when set, else ``user_data_dir()``; read when called, not at import."""
    configured = os.environ.get("MEMENTO_PATH", "").strip()
    return Path(configured).expanduser() if configured else user_data_dir()


DEFAULT_PATH = user_data_dir()
"""The per-user directory of the embedded store (as of import); ``$MEMENTO_PATH`` overrides it."""


def store_exists(path: str | os.PathLike[str]) -> bool:
    """Whether an embedded store has been created at ``path`` (Chroma's database is there)."""
    return (Path(path).expanduser() / "chroma.sqlite3").is_file()
