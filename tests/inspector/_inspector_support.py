"""The inspector tests' store (two users of one project, a stranger, a chat) and clients of
the app over it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from starlette.testclient import TestClient

from memento_core import Memento, MemoryDraft, Scope
from memento_inspector import create_app

ALICE = Scope(user_id="alice", project_id="apollo")
BOB = Scope(user_id="bob", project_id="apollo")
CAROL = Scope(user_id="carol")
SESSION = "chat-1"
TOKEN = "test-token-123"
HOSTS = {"testserver", "127.0.0.1", "localhost"}


@dataclass(frozen=True)
class Seeded:
    coffee: str
    peanuts: str
    database: str
    party: str
    bob_team: str
    public: str
    carol: str
    hotword: str


def seed(mem: Memento) -> Seeded:
    week_ago = datetime.now(timezone.utc) - timedelta(days=7)
    ids = mem.remember_many(
        [
            MemoryDraft("Alice takes her coffee black, no sugar.", scope=ALICE,
                        tags=["pref:coffee"], created_at=week_ago),
            MemoryDraft("Alice is allergic to peanuts.", scope=ALICE, importance=0.9),
            MemoryDraft("The Apollo team moved its database from MySQL to MariaDB.",
                        scope=ALICE, privacy="team", tags=["tech:mariadb"]),
            MemoryDraft("Bob is planning a surprise party for Alice on Friday.", scope=BOB,
                        importance=0.8),
            MemoryDraft("Bob runs the Apollo deploys on Tuesdays.", scope=BOB, privacy="team"),
            MemoryDraft("The office coffee machine is on the third floor.", scope=CAROL,
                        privacy="public"),
            MemoryDraft("Carol's badge number is 4471.", scope=CAROL),
            MemoryDraft("Alice's cat is called Zephyr.", scope=ALICE, hotwords=["Zephyr"]),
        ]
    )  # fmt: skip
    mem.link(ids[1], "derived_from", ids[0])
    mem.feedback(ids[0], "helpful", note="used in a reply")
    chat = mem.chat(SESSION, scope=ALICE)
    chat.append({"role": "user", "content": "I moved to Lisbon last month."})
    chat.append({"role": "assistant", "content": "Noted: you live in Lisbon now."})
    mem.summarize_thread(SESSION, scope=ALICE)
    return Seeded(*ids)


def client_for(mem: Memento, *, user: str | None = None, **options: object) -> TestClient:
    """A test client of an inspector over ``mem``, holding its token (in both modes)."""
    app = create_app(
        mem,
        user=user,
        project="apollo" if user in ("alice", "bob") else None,
        token=TOKEN,
        allowed_hosts=HOSTS,
        **options,  # type: ignore[arg-type]
    )
    client = TestClient(app, follow_redirects=False)
    client.headers["x-memento-token"] = TOKEN
    return client


def csrf_of(client: TestClient) -> str:
    inspector = client.app.state.inspector  # type: ignore[attr-defined]
    return str(inspector.csrf)
