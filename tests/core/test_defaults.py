"""Where a store lives when no path is given, what the commands create there, and ``--version``.

The library, the ``memento-core`` command and the MCP server share one default: ``$MEMENTO_PATH``,
else the per-user data directory (``$XDG_DATA_HOME/memento`` here, on Linux).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import memento_core
from memento_core import Embedder, Memento, Scope, default_store_path
from memento_core import _memento as memento_module
from memento_core.cli import main

ANN = Scope(user_id="ann")
READ_ONLY = [
    ["stats"],
    ["recall", "coffee"],
    ["get", "m1"],
    ["export"],
    ["forget-candidates"],
    ["forget", "m1"],
    ["purge"],
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> Iterator[Path]:
    """A fresh XDG data directory and no $MEMENTO_PATH; commands reuse the loaded model."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("MEMENTO_PATH", raising=False)
    monkeypatch.setattr(memento_module, "default_embedder", lambda: embedder)
    yield tmp_path / "data"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG rule is for Linux")
def test_the_default_is_the_per_user_data_directory(home: Path, tmp_path: Path) -> None:
    assert default_store_path() == home / "memento"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG rule is for Linux")
def test_a_relative_xdg_data_home_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")
    monkeypatch.delenv("MEMENTO_PATH", raising=False)
    assert default_store_path() == Path.home() / ".local" / "share" / "memento"


def test_memento_path_overrides_the_default(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMENTO_PATH", str(tmp_path / "chosen"))
    assert default_store_path() == tmp_path / "chosen"


def test_library_and_command_share_the_default_store(
    home: Path, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["remember", "Ann takes her coffee black.", "--user", "ann"]) == 0
    memory_id = capsys.readouterr().out.strip()
    assert (home / "memento").is_dir()
    with Memento.open(embedder=embedder) as store:
        assert store.location == str(home / "memento")
        assert store.get(memory_id).content == "Ann takes her coffee black."


@pytest.mark.parametrize("command", READ_ONLY, ids=[c[0] for c in READ_ONLY])
def test_commands_that_only_look_create_no_store(
    home: Path, tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "nowhere"
    for where in ([], ["--path", str(elsewhere)]):
        assert main([*command, *where]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("memento-core: error: no Memento store at ") and "\n" not in err
    assert not (home / "memento").exists() and not elsewhere.exists()


def test_a_look_at_an_existing_store_leaves_it_as_it_was(
    home: Path, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    with Memento.open(embedder=embedder) as store:
        store.remember("Ann takes her coffee black.", scope=ANN)
    assert main(["stats"]) == 0
    assert main(["recall", "coffee", "--user", "ann", "--json"]) == 0
    assert "coffee black" in capsys.readouterr().out
    with Memento.open(embedder=embedder) as store:
        assert store.stats().memories == 1


def test_version_prints_the_distribution_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memento_core", "--version"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"memento-core {memento_core.__version__}"
