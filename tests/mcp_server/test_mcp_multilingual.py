"""The MCP server in Korean: ``--embedder multilingual`` gives a new store that embedder, and a
paraphrase stored and recalled through the tools is found; the store keeps its space."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _mcp_support import SyncSession, open_session, server_command, server_env
from mcp import StdioServerParameters, stdio_client

from memento_core import Memento, plugins

FACT = "일요일 오전에는 성당에 가서 미사를 드려요."
OTHERS = [
    "성당 옆 공원에 벚꽃이 예쁘게 폈어요.",
    "주말에는 보통 늦잠을 자요.",
    "카페에서 일할 때는 주로 콜드브루를 시켜요.",
]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-ko") / "store"


@pytest.fixture(scope="module")
def korean(store_path: Path) -> Iterator[SyncSession]:
    """A stdio server for minji on a new store, created with the multilingual embedder."""
    command = server_command("--path", str(store_path), "--user", "minji", "--embedder",
                             "multilingual")  # fmt: skip
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env())
    yield from open_session(lambda: stdio_client(params))


def test_a_korean_paraphrase_is_recalled_through_the_tools(korean: SyncSession) -> None:
    wanted = korean.ok("remember", {"content": FACT})["memory_id"]
    for text in OTHERS:
        korean.ok("remember", {"content": text})
    found = korean.ok("recall", {"query": "종교 생활은 어떻게 해?", "limit": 1})
    assert [item["id"] for item in found["items"]] == [wanted]


def test_the_store_records_the_multilingual_space(korean: SyncSession, store_path: Path) -> None:
    korean.ok("remember", {"content": "저는 매일 아침 조깅을 해요."})
    with Memento.open(store_path, read_only=True) as mem:
        assert mem.info.embedder == plugins.embedder("multilingual").name
