"""Chat into long-term memory on LoCoMo: what reaches episodic memory through ``mem.chat(...)``.

Every LoCoMo conversation is replayed through a chat window session by session (speaker A as
the user, speaker B as the assistant, each message named after its speaker and dated with its
session's date), with a 2,000-token window, overflow snapshots on, and the session closed (so
archived) when it ends. Then the LoCoMo questions are asked with ``recall`` over the user's
long-term memories. Beside it, in the same run, the same turns are stored one memory per turn
with ``remember_many`` (``locomo.py``'s protocol) and asked the same questions.

Scoring is ``locomo.py``'s (categories 1–4 with evidence, recall@k the share of a question's
evidence turns in the top k), except that a memory counts for an evidence turn when it contains
that turn's text — so a chat archive holding a turn counts, wherever it holds it. Target:
chat-path R@5 ≥ 95 % of the turn-level R@5. Also reported: stored memories per message, and
write time (every ``append`` and ``close`` against one ``remember_many``).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/chat_to_memory.py [--quick] [--out DIR]

``--quick`` replays the first conversation only. The data is read from ``--data`` (default
``../shared/bench/locomo10.json``, or ``$LOCOMO_PATH``), never copied into the repository.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    arguments,
    load_average,
    locomo_missing,
    machine,
    offline_single_thread,
    progress_bar,
    report_footer,
    write_report,
)

offline_single_thread()

from locomo import (  # noqa: E402  # after the environment is set, before torch loads
    BATCH_SIZE,
    KS,
    Conversation,
    Question,
    Scores,
    Turn,
    load_conversations,
)
from rich.console import Console  # noqa: E402

from memento_core import (  # noqa: E402
    Memento,
    MemoryDraft,
    Message,
    Role,
    Scope,
    WindowPolicy,
    plugins,
)
from memento_core.embedding import SentenceTransformerEmbedder  # noqa: E402

USER = "locomo"
WINDOW_TOKENS = 2_000
TARGET_SHARE = 0.95
CHAT = "chat path (mem.chat, 2,000-token window, snapshots, close)"
TURNS = "turn level (remember_many, one memory per turn)"


@dataclass(frozen=True)
class Said:
    """One LoCoMo turn as said in a chat: who, what (caption included), when, which session."""

    turn: Turn
    session: int
    speaker: str
    content: str
    raw: str
    """The turn's own text, which a memory must contain to count for it."""


def said_turns(conversation: Conversation, raw: dict[str, Any]) -> list[Said]:
    """The conversation's turns with their speaker and text split out of ``locomo.turn_text``
    (``"[<date>] <speaker>: <text> [image: ...]"``), checked against the raw data."""
    texts = {
        turn["dia_id"]: turn["text"]
        for key, value in raw["conversation"].items()
        if key.startswith("session_") and isinstance(value, list)
        for turn in value
    }
    out = []
    for turn in conversation.turns:
        _, rest = turn.text.split("] ", 1)
        speaker, content = rest.split(": ", 1)
        session = int(turn.dia_id[1:].split(":")[0])
        out.append(Said(turn, session, speaker, content, texts[turn.dia_id]))
    return out


@dataclass
class Run:
    scores: dict[str, Scores] = field(default_factory=lambda: {CHAT: Scores(), TURNS: Scores()})
    messages: int = 0
    chat_memories: int = 0
    turn_memories: int = 0
    chat_seconds: float = 0.0
    turn_seconds: float = 0.0


def add_hits(scores: Scores, question: Question, contents: Sequence[str], said: list[Said]) -> None:
    """Recall@k where a memory counts for each evidence turn whose text it contains."""
    texts = {s.turn.dia_id: s.raw for s in said if s.turn.dia_id in question.evidence}
    hits = tuple(
        sum(1 for text in texts.values() if any(text in c for c in contents[:k])) / len(texts)
        for k in KS
    )
    scores.by_category.setdefault(question.category, []).append(hits)


def replay(mem: Memento, conversation: Conversation, said: list[Said], speaker_a: str) -> None:
    """Each session through one chat window, closed when the session ends."""
    scope = Scope(user_id=USER)
    policy = WindowPolicy(max_tokens=WINDOW_TOKENS, snapshot_on_overflow=True)
    sessions = sorted({s.session for s in said})
    for session in sessions:
        chat = mem.chat(f"{conversation.sample_id}-s{session}", scope=scope, policy=policy)
        for turn in (s for s in said if s.session == session):
            role = Role.USER if turn.speaker == speaker_a else Role.ASSISTANT
            message = Message(
                role, turn.content, name=turn.speaker, created_at=turn.turn.created_at
            )
            chat.append(message)
        chat.close()


def run_conversation(
    conversation: Conversation,
    raw: dict[str, Any],
    embedder: SentenceTransformerEmbedder,
    run: Run,
    advance: Callable[[int], None],
) -> None:
    said = said_turns(conversation, raw)
    scope = Scope(user_id=USER)
    drafts = [
        MemoryDraft(content=t.text, scope=scope, created_at=t.created_at)
        for t in conversation.turns
    ]
    with (
        tempfile.TemporaryDirectory(prefix="chat-to-memory-") as tmp,
        Memento.open(Path(tmp) / "chat", embedder=embedder) as chat_store,
        Memento.open(Path(tmp) / "turns", embedder=embedder) as turn_store,
    ):
        started = time.perf_counter()
        replay(chat_store, conversation, said, raw["conversation"]["speaker_a"])
        run.chat_seconds += time.perf_counter() - started
        advance(len(said))
        started = time.perf_counter()
        turn_store.remember_many(drafts)
        run.turn_seconds += time.perf_counter() - started
        run.messages += len(said)
        run.chat_memories += chat_store.stats().memories
        run.turn_memories += turn_store.stats().memories
        for question in conversation.questions:
            for name, store in ((CHAT, chat_store), (TURNS, turn_store)):
                found = store.recall(question.text, scope=scope, limit=max(KS))
                add_hits(run.scores[name], question, [r.item.content for r in found], said)
            advance(1)


def render_markdown(report: dict[str, Any]) -> str:
    chat, turns = (report["retrievers"][name]["overall"] for name in (CHAT, TURNS))
    share = report["chat_r5_share_of_turn_level"]
    lines = [
        "# Chat into long-term memory (LoCoMo)",
        "",
        f"{report['conversations']} conversation(s), {report['messages']:,} messages, "
        f"{report['questions_scored']:,} questions scored"
        + (" — **quick run** (first conversation only)" if report["quick"] else "")
        + ". A memory counts for an evidence turn when it contains that turn's text.",
        "",
        "| path | R@1 | R@5 | R@10 | memories per message | write time | messages/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, scores in ((CHAT, chat), (TURNS, turns)):
        path = report["paths"][name]
        lines.append(
            f"| {name} | {scores['R@1']:.1f} | {scores['R@5']:.1f} | {scores['R@10']:.1f} | "
            f"{path['memories_per_message']:.2f} | {path['write_seconds']:.1f} s | "
            f"{path['messages_per_s']:.1f} |"
        )
    verdict = "met" if share >= TARGET_SHARE else "missed"
    lines += [
        "",
        f"Chat-path R@5 is **{100 * share:.1f} %** of the turn-level R@5 "
        f"(target ≥ {100 * TARGET_SHARE:.0f} %: {verdict}).",
        "",
        "The chat path's write time covers every `append` (one message at a time, each stored "
        "in the session's history), the overflow snapshots and the archive at `close`; the "
        "turn level's is one `remember_many`.",
        "",
        *report_footer(report),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--quick", action="store_true", help="the first conversation only")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    if locomo_missing(args.data):
        return 2
    raw_samples = {s["sample_id"]: s for s in json.loads(args.data.read_text(encoding="utf-8"))}
    conversations = load_conversations(args.data)[: 1 if args.quick else None]
    embedder = SentenceTransformerEmbedder(batch_size=BATCH_SIZE)
    embedder.embed_documents(["warm-up: load the model before anything is timed"])
    plugins.manager()  # loading the installed adapters' plugins is a one-time cost, not a write

    run = Run()
    load_at_start = load_average()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    wall = time.perf_counter()
    work = sum(len(c.turns) + len(c.questions) for c in conversations)
    with progress_bar(console) as progress:
        task = progress.add_task("messages + questions", total=work)
        for conversation in conversations:
            progress.update(task, description=conversation.sample_id)
            run_conversation(
                conversation,
                raw_samples[conversation.sample_id],
                embedder,
                run,
                lambda n: progress.advance(task, n),
            )

    retrievers = {name: scores.summary() for name, scores in run.scores.items()}
    turn_r5 = retrievers[TURNS]["overall"]["R@5"]
    share = retrievers[CHAT]["overall"]["R@5"] / turn_r5 if turn_r5 else 0.0

    def path(memories: int, seconds: float) -> dict[str, float]:
        return {
            "memories": memories,
            "memories_per_message": round(memories / run.messages, 3),
            "write_seconds": round(seconds, 1),
            "messages_per_s": round(run.messages / seconds, 1),
        }

    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/chat_to_memory.py", *(argv or sys.argv[1:])]),
        "started": started,
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "quick": args.quick,
        "conversations": len(conversations),
        "messages": run.messages,
        "questions_scored": run.scores[CHAT].count,
        "window_tokens": WINDOW_TOKENS,
        "retrievers": retrievers,
        "paths": {
            CHAT: path(run.chat_memories, run.chat_seconds),
            TURNS: path(run.turn_memories, run.turn_seconds),
        },
        "chat_r5_share_of_turn_level": round(share, 3),
        "target_share": TARGET_SHARE,
        "machine": {**machine(), "load_average_at_start": load_at_start},
        "load_average_at_end": load_average(),
    }
    markdown = render_markdown(report)
    write_report(args.out, "chat_to_memory", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
