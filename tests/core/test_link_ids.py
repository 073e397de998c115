"""A link's record id parts its two memory ids whatever they hold: links between memories
whose caller-chosen ids contain ``:`` are two links, not one overwriting the other (issue 31)."""

from __future__ import annotations

import json

from memento_core import Memento, MemoryDraft, Scope

ANN = Scope(user_id="ann")


def test_links_between_ids_holding_the_separator_stay_apart(mem: Memento) -> None:
    ids = ["a", "a:cause_of:b", "b:cause_of:c", "c", "a%3Acause_of%3Ab"]
    mem.remember_many([MemoryDraft(f"memory called {i}", scope=ANN, id=i) for i in ids])
    # Joined plainly, both are "a:cause_of:b:cause_of:c".
    mem.link("a:cause_of:b", "cause_of", "c", note="first", scope=ANN)
    mem.link("a", "cause_of", "b:cause_of:c", note="second", scope=ANN)
    # Escaped carelessly (":" alone), this one would be the first's.
    mem.link("a%3Acause_of%3Ab", "cause_of", "c", note="third", scope=ANN)
    found = {(link.source_id, link.target_id, link.note) for link in mem.all_links()}
    assert found == {
        ("a:cause_of:b", "c", "first"),
        ("a", "b:cause_of:c", "second"),
        ("a%3Acause_of%3Ab", "c", "third"),
    }
    exported = list(mem.export())
    mem.forget("a", hard=True, scope=ANN)
    assert {(link.source_id, link.target_id) for link in mem.all_links()} == {
        ("a:cause_of:b", "c"),
        ("a%3Acause_of%3Ab", "c"),
    }
    assert sum(json.loads(line)["kind"] == "link" for line in exported) == 3
