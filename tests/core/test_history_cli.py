"""``memento-core changes ID``: a memory's history on the command line, as lines or JSON."""

from __future__ import annotations

import json

import pytest

from memento_core import Memento, Scope
from memento_core.cli import main

ANN = Scope(user_id="ann")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_changes_prints_each_event_and_hides_them_from_others(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, where = cli_store
    memory_id = mem.remember("The boiler is serviced in May.", scope=ANN)
    mem.update(memory_id, content="The boiler is serviced in June.", scope=ANN)
    mem.pin(memory_id)

    code, out, _ = run(capsys, "changes", *where, memory_id, "--user", "ann")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 3
    assert " created " in lines[0] and "'The boiler is serviced in May.'" in lines[0]
    assert " updated " in lines[1] and " ann " in lines[1]
    assert "-> 'The boiler is serviced in June.'" in lines[1]
    assert " pinned " in lines[2] and " owner " in lines[2]

    code, out, _ = run(capsys, "changes", *where, memory_id, "--json")
    assert code == 0
    assert [c["change"] for c in json.loads(out)] == ["created", "updated", "pinned"]

    code, _, err = run(capsys, "changes", *where, memory_id, "--user", "ben")
    assert code == 2 and err.strip() == f"memento-core: error: no memory with id {memory_id!r}"
