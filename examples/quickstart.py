"""Memento in one minute: two users, two sessions, recall with reasons, privacy, export.

Run it with `make demo` (it uses an embedded store in a temporary directory); `make inspect`
runs it on a kept store and opens that in the inspector.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import datetime, timedelta, timezone

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console
from rich.table import Table

from memento_core import Memento, MemoryDraft, Scope

console = Console(highlight=False, width=max(110, shutil.get_terminal_size().columns))


def show(title: str, results: list) -> None:  # type: ignore[type-arg]
    table = Table(title=title, title_justify="left")
    for column in ("score", "memory", "relevance", "recency", "importance", "usage", "matched"):
        table.add_column(column, justify="left" if column in ("memory", "matched") else "right")
    for r in results:
        why = r.reason
        table.add_row(
            f"{r.score:.3f}", r.item.content, f"{why.relevance:.2f}", f"{why.recency:.2f}",
            f"{why.importance:.2f}", f"{why.usage:.2f}", ", ".join(why.matched_terms),
        )  # fmt: skip
    console.print(table)


def main() -> None:
    # `make inspect` keeps the store (MEMENTO_QUICKSTART_DIR) to open it in the inspector.
    kept = os.environ.get("MEMENTO_QUICKSTART_DIR")
    directory = kept or tempfile.mkdtemp(prefix="memento-quickstart-")
    console.print(f"[bold]Opening an embedded store[/] in {directory}")
    mem = Memento.open(directory)

    alice = Scope(user_id="alice", project_id="apollo")
    bob = Scope(user_id="bob", project_id="apollo")
    last_week = datetime.now(timezone.utc) - timedelta(days=7)

    console.print("\n[bold]Session 1[/] (a week ago): what Alice and Bob told their assistant")
    mem.remember_many(
        [
            MemoryDraft("Alice takes her coffee black, no sugar.", scope=alice.with_session("s1"),
                        tags=["pref:coffee"], created_at=last_week),
            MemoryDraft("Alice is allergic to peanuts.", scope=alice.with_session("s1"),
                        importance=0.9, created_at=last_week),
            MemoryDraft("The Apollo team moved its database from MySQL to MariaDB.",
                        scope=alice.with_session("s1"), privacy="team", tags=["tech:mariadb"],
                        created_at=last_week),
            MemoryDraft("Bob is planning a surprise party for Alice on Friday.",
                        scope=bob.with_session("s1"), importance=0.8, created_at=last_week),
        ]
    )  # fmt: skip
    console.print("\n[bold]Session 2[/] (today)")
    mem.remember("Alice switched to oat milk in her coffee.", scope=alice.with_session("s2"),
                 tags=["pref:coffee"])  # fmt: skip
    mem.remember("Bob prefers tea over coffee.", scope=bob.with_session("s2"))

    show(
        "Alice asks: how do I take my coffee?",
        mem.recall("how do I take my coffee?", scope=alice, limit=3, min_relevance=0.2),
    )
    show(
        "Alice asks: which database do we use?",
        mem.recall("which database do we use?", scope=alice, limit=2, min_relevance=0.2),
    )

    secret = mem.recall("surprise party on Friday", scope=alice, limit=5)
    leaked = [r for r in secret if r.item.scope.user_id == "bob"]
    console.print(
        f"\n[bold]Privacy:[/] Alice searches for 'surprise party' and sees {len(leaked)} of Bob's "
        "private memories."
    )
    assert not leaked, "a private memory leaked across users"
    bob_sees = mem.recall("surprise party on Friday", scope=bob, limit=1)
    console.print(f"Bob, searching the same words, finds: [italic]{bob_sees[0].item.content}[/]")
    team = mem.recall("database", scope=bob, limit=1)
    console.print(f"Bob sees the team memory Alice wrote: [italic]{team[0].item.content}[/]")

    export = "".join(mem.export("ndjson"))
    path = os.path.join(directory, "export.ndjson")
    with open(path, "w", encoding="utf-8") as out:
        out.write(export)
    console.print(f"\n[bold]Export:[/] {export.count(chr(10))} NDJSON records written to {path}")
    console.print(export.splitlines()[0][:160] + " …")
    stats = mem.stats()
    console.print(f"\n{stats.memories} memories, {stats.users} users, embedder {stats.embedder}.")


if __name__ == "__main__":
    main()
