"""The CLI honours ``--user`` on reads and changes, and ``memento import`` checks every record
with ``remember``'s rules before anything is written (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memento_core import Embedder, InvalidImport, Memento, Scope
from memento_core.cli import main

ANN = Scope(user_id="ann")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(result: tuple[int, str, str], *fragments: str) -> None:
    code, _, err = result
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("memento-core: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_get_and_export_honour_user(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, path = cli_store
    secret = mem.remember("Ann's private passport number is X99", scope=ANN)
    one_line_error(run(capsys, "get", secret, *path, "--user", "zed"), "no memory with id")
    code, out, _ = run(capsys, "get", secret, *path, "--user", "ann")
    assert code == 0 and json.loads(out)["content"] == "Ann's private passport number is X99"

    code, out, _ = run(capsys, "export", *path, "--user", "zed")
    assert code == 0 and "X99" not in out
    code, out, _ = run(capsys, "export", *path, "--user", "ann")
    assert "X99" in out
    one_line_error(run(capsys, "export", *path, "--project", "p"), "--project means nothing")


def test_changes_with_user_need_the_owner(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, path = cli_store
    public = mem.remember("Ann's public tip about trains", scope=ANN, privacy="public")
    for argv in (["forget", public, "--hard"], ["pin", public], ["feedback", public, "helpful"]):
        one_line_error(run(capsys, *argv, *path, "--user", "zed"), "belongs to another user")
    item = mem.get(public)
    assert not item.pinned and item.feedback == {}


def _import(
    capsys: pytest.CaptureFixture[str], path: list[str], tmp: Path, lines: list[str]
) -> Any:
    file = tmp / "in.ndjson"
    file.write_text(
        "".join(line + "\n" for line in lines), encoding="utf-8", errors="surrogatepass"
    )
    return run(capsys, "import", str(file), *path)


def _memory(n: int, **fields: Any) -> str:
    record = {
        "kind": "memory",
        "id": f"m{n}",
        "content": f"imported memory number {n}",
        "type": "episodic",
        "privacy": "private",
        "importance": 0.5,
        "created_at": "2025-01-01T00:00:00+00:00",
        "scope": {"user_id": "ann"},
        **fields,
    }
    return json.dumps(record)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"superseded_by": {"$ne": 1}}, "superseded_by must be a memory id"),
        ({"source": "chat\ud800"}, "lone surrogate"),
        ({"pinned": "false"}, "pinned must be true or false"),
        ({"source": {"$ne": 1}}, "source must be a string"),
        ({"title": "t" * 501}, "title is 501 characters"),
        ({"hotwords": ["bad\x01word"]}, "hotword"),
        ({"importance": 10**400}, "importance"),
        ({"created_at": 0}, "created_at must be an ISO 8601 string"),
    ],
    ids=["superseded-object", "surrogate", "str-bool", "operator", "title", "hotword", "huge", "0"],
)
def test_import_is_all_or_nothing_with_the_line_number(
    cli_store: tuple[Memento, list[str]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    bad: dict[str, Any],
    says: str,
) -> None:
    mem, path = cli_store
    lines = [_memory(n) for n in range(1, 40)] + [_memory(40, **bad)] + [_memory(41)]
    one_line_error(_import(capsys, path, tmp_path, lines), "line 40", says)
    assert mem.items(include_deleted=True) == []
    with pytest.raises(InvalidImport, match="line 40"):
        mem.import_ndjson(lines)
    assert mem.items(include_deleted=True) == []


def test_a_stores_own_export_with_many_hotword_variants_imports(
    cli_store: tuple[Memento, list[str]], embedder: Embedder, tmp_path: Path
) -> None:
    mem, _ = cli_store
    variants = [f"codeword{n}" for n in range(100)]
    mem.remember("Ann's project has a hundred code names", scope=ANN, hotwords=variants)
    with Memento.open(tmp_path / "copy", embedder=embedder) as copy:
        assert copy.import_ndjson(mem.export())["memories"] == 1
        assert copy.items()[0].hotwords == tuple(variants)
        assert copy.hotword_detector() is not None


def test_every_command_refuses_an_adapter_scope_and_flags_it_does_not_take(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """``adapter:`` scope values are an adapter's own records: no command claims them (issue
    31: ``export --user adapter:langgraph`` printed the LangGraph store's items)."""
    mem, path = cli_store
    kept = mem.remember("LangGraph's own record", scope=Scope(user_id="adapter:langgraph"))
    for argv in (
        ["export", "--user", "adapter:langgraph"],
        ["get", kept, "--user", "adapter:langgraph"],
        ["recall", "record", "--project", "adapter:x"],
        ["forget", kept, "--hard", "--user", "adapter:langgraph"],
        ["review", "--project", "adapter:x"],
        ["sleep", "--user", "adapter:langgraph"],
        ["erase-user", "adapter:langgraph"],
    ):
        one_line_error(run(capsys, *argv, *path), "adapter:")
    for argv, flag in (
        (["stats", "--user", "ann"], "--user"),
        (["purge", "--project", "p"], "--project"),
        (["build-directory", "--agent", "a"], "--agent"),
        (["erase-user", "ann", "--user", "ann"], "--user"),
        (["worker", "--once", "--session", "s"], "--session"),
    ):
        one_line_error(run(capsys, *argv, *path), f"{flag} means nothing")
    assert mem.get(kept).content == "LangGraph's own record"
