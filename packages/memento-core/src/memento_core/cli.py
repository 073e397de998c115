"""The ``memento-core`` command line (also ``python -m memento_core``). User mistakes print one
line and exit 2, never a traceback.

Only the commands that add memories (``remember``, ``import``) create a store; every other
command refuses a location where no store exists, so looking around creates nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memento_core._memento import Memento
from memento_core._model import (
    FeedbackKind,
    LinkType,
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
    check_claimable,
)
from memento_core._paths import default_store_path, store_exists
from memento_core.errors import InvalidInput, MementoError, StoreNotFound

PROG = "memento-core"
EXIT_USAGE = 2
# The commands that may create a store where none exists yet.
CREATING_COMMANDS = frozenset({"remember", "import"})


SCOPE_FLAGS = ("user", "agent", "project", "session")


def _scope(args: argparse.Namespace) -> Scope:
    return Scope(
        user_id=args.user, agent_id=args.agent, project_id=args.project, session_id=args.session
    )


def _check_scope_flags(args: argparse.Namespace) -> None:
    """Refuse the scope flags a command does not take, and scope values no caller may claim
    (``adapter:…``, ``check_claimable``): once, for every command, before it runs."""
    taken = getattr(args, "scope_flags", ())
    for flag in SCOPE_FLAGS:
        if flag not in taken and getattr(args, flag, None) is not None:
            raise InvalidInput(f"--{flag} means nothing for `memento {args.command}`; leave it out")
    if taken:
        check_claimable(_scope(args))
    if getattr(args, "user_id", None) is not None:  # erase-user's argument
        check_claimable(Scope(user_id=args.user_id))


def _caller(args: argparse.Namespace) -> Scope | None:
    """The scope flags as the caller (reads see what it may see; changes need it to own the
    memory); None when none is given: the CLI then acts as the store's owner."""
    given = (args.user, args.agent, args.project, args.session)
    return _scope(args) if any(value is not None for value in given) else None


READING_COMMANDS = frozenset({"recall", "get", "changes", "export", "stats", "forget-candidates"})
"""Commands that change nothing: they open an embedded store read-only, so they work while
another process (an MCP server, an app) holds it for writing."""


def _open(args: argparse.Namespace) -> Memento:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = getattr(args, "embedder", None)
    if args.url is not None:
        return Memento.open(url=args.url, embedder=embedder)
    path = Path(args.path).expanduser() if args.path else default_store_path()
    if args.command not in CREATING_COMMANDS and not store_exists(path):
        raise StoreNotFound(
            f"no Memento store at {path} (`{PROG} remember` creates one; "
            "--path or $MEMENTO_PATH choose another)",
            path=str(path),
        )
    read_only = args.read_only or args.command in READING_COMMANDS
    return Memento.open(path, read_only=read_only, embedder=embedder)


def _console() -> Any:
    import shutil

    from rich.console import Console

    # Tables stay readable when the output is piped (rich would assume 80 columns).
    return Console(highlight=False, width=max(110, shutil.get_terminal_size().columns))


def _time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {value!r}") from err


def cmd_remember(args: argparse.Namespace) -> None:
    content = sys.stdin.read() if args.content == "-" else args.content
    with _open(args) as mem:
        memory_id = mem.remember(
            content,
            scope=_scope(args),
            type=args.type,
            privacy=args.privacy,
            importance=args.importance,
            tags=args.tag or (),
            hotwords=args.hotword or (),
            title=args.title,
            pinned=args.pin,
            created_at=args.created_at,
        )
    print(memory_id)


def cmd_recall(args: argparse.Namespace) -> None:
    from rich.table import Table

    with _open(args) as mem:
        results = mem.recall(
            args.query,
            scope=_scope(args),
            limit=args.limit,
            filter={"types": args.type or None, "tags": args.tag or None},
        )
    if args.json:
        rows = [
            {"id": r.item.id, "score": r.score, "content": r.item.content, "reason": str(r.reason)}
            for r in results
        ]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    table = Table(title=f"recall: {args.query}", show_lines=False)
    for column in ("#", "score", "memory", "rel", "dense", "kw", "rec", "imp", "use", "dup"):
        table.add_column(column, justify="left" if column == "memory" else "right")
    table.add_column("matched")
    for n, r in enumerate(results, 1):
        why = r.reason
        table.add_row(
            str(n), f"{r.score:.3f}", _snippet(r.item), f"{why.relevance:.2f}", f"{why.dense:.2f}",
            f"{why.keyword:.2f}", f"{why.recency:.2f}", f"{why.importance:.2f}",
            f"{why.usage:.2f}", f"{why.duplication:.2f}", ", ".join(why.matched_terms),
        )  # fmt: skip
    _console().print(table)


def _snippet(item: MemoryItem, width: int = 60) -> str:
    text = " ".join(item.content.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def cmd_get(args: argparse.Namespace) -> None:
    from memento_core._transfer import memory_record

    with _open(args) as mem:
        item = mem.get(args.id, scope=_caller(args))
    print(json.dumps(memory_record(item), ensure_ascii=False, indent=2))


def cmd_changes(args: argparse.Namespace) -> None:
    from memento_core._history import change_json

    with _open(args) as mem:
        changes = mem.changes(args.id, scope=_caller(args))
    rows = [change_json(change) for change in changes]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    for row in rows:
        actor = row["actor"] if isinstance(row["actor"], str) else row["actor"]["user_id"] or "-"
        empty: tuple[Any, ...] = (None, [], {})  # what a memory was created without
        fields = sorted(
            name
            for name in {*row["before"], *row["after"]}
            if name in row["before"] or row["after"][name] not in empty
        )
        shown = "; ".join(
            f"{name}: {row['before'].get(name)!r} -> {row['after'].get(name)!r}"
            if name in row["before"]
            else f"{name}: {row['after'].get(name)!r}"
            for name in fields
        )
        related = f" [{row['related']}]" if row["related"] else ""
        print(f"{row['at']}  {row['change']:<10}  {actor:<12}{related}  {shown}")


def cmd_forget(args: argparse.Namespace) -> None:
    with _open(args) as mem:
        mem.forget(args.id, hard=args.hard, scope=_caller(args))
    print(f"{'erased' if args.hard else 'forgot (restorable)'} {args.id}")


def cmd_restore(args: argparse.Namespace) -> None:
    with _open(args) as mem:
        mem.restore(args.id, scope=_caller(args))
    print(f"restored {args.id}")


def cmd_pin(args: argparse.Namespace) -> None:
    with _open(args) as mem:
        (mem.pin if args.command == "pin" else mem.unpin)(args.id, scope=_caller(args))
    print(f"{args.command}ned {args.id}")


def cmd_link(args: argparse.Namespace) -> None:
    with _open(args) as mem:
        mem.link(args.source, args.type, args.target, note=args.note, scope=_caller(args))
    print(f"linked {args.source} -{args.type}-> {args.target}")


def cmd_feedback(args: argparse.Namespace) -> None:
    with _open(args) as mem:
        mem.feedback(args.id, args.kind, score=args.score, note=args.note, scope=_caller(args))
    print(f"recorded {args.kind} for {args.id}")


def cmd_export(args: argparse.Namespace) -> None:
    # --user exports that user's own memories; the other scope flags select nothing.
    with _open(args) as mem:
        lines = mem.export(args.format, user_id=args.user)
        if args.output in (None, "-"):
            sys.stdout.writelines(lines)
        else:
            with open(args.output, "w", encoding="utf-8", newline="") as out:
                out.writelines(lines)
            print(f"exported to {args.output}", file=sys.stderr)


def cmd_import(args: argparse.Namespace) -> None:
    from rich.progress import Progress

    try:
        lines = Path(args.file).read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError) as err:
        raise MementoError(f"cannot read {args.file}: {err}") from err
    total = sum(1 for line in lines if '"kind":"memory"' in line)
    with _open(args) as mem, Progress(transient=True) as progress:
        task = progress.add_task("importing", total=total or None)
        counts = mem.import_ndjson(lines, on_progress=lambda n: progress.advance(task, n))
    print(", ".join(f"{n} {kind}" for kind, n in counts.items()) + " imported")


def cmd_stats(args: argparse.Namespace) -> None:
    from rich.table import Table

    with _open(args) as mem:
        stats = mem.stats()
    table = Table(title="memento stats", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("store", stats.location)
    table.add_row("embedder", f"{stats.embedder} ({stats.dimension} d)")
    table.add_row("memories", str(stats.memories))
    for kind, n in stats.by_type.items():
        table.add_row(f"  {kind}", str(n))
    for privacy, n in stats.by_privacy.items():
        table.add_row(f"  {privacy}", str(n))
    table.add_row("soft-deleted", str(stats.deleted))
    table.add_row("users", str(stats.users))
    table.add_row("links", str(stats.links))
    table.add_row("feedback events", str(stats.feedback_events))
    _console().print(table)


def cmd_sleep(args: argparse.Namespace) -> None:
    from rich.progress import Progress

    with _open(args) as mem, Progress(transient=True) as progress:
        task = progress.add_task("consolidating", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        report = mem.sleep(_scope(args), on_progress=advance)
    rows = [
        ("episodes considered", report.considered),
        ("clusters", report.clusters),
        ("facts written", len(report.written)),
        ("episodes consolidated", len(report.consolidated)),
        ("derived_from links", report.derived_links),
        ("duplicates merged", len(report.merged)),
        ("contradictions linked", len(report.contradictions)),
    ]
    _print_rows("sleep", rows)
    for fact_id in report.written:
        print(f"  fact {fact_id}")


def _print_rows(title: str, rows: Sequence[tuple[str, object]]) -> None:
    from rich.table import Table

    table = Table(title=title, show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for what, value in rows:
        table.add_row(what, str(value))
    _console().print(table)


def cmd_review(args: argparse.Namespace) -> None:
    from rich.table import Table

    with _open(args) as mem:
        if args.id:
            item = mem.review(args.id, args.grade, scope=_caller(args))
            print(f"next review of {item.id} on {item.review_due_at:%Y-%m-%d}")
            return
        due = mem.review_due(_scope(args))
    table = Table(title="reviews due")
    for column in ("id", "memory", "importance", "due"):
        table.add_column(column)
    for item in due:
        when = f"{item.review_due_at:%Y-%m-%d}" if item.review_due_at else ""
        table.add_row(item.id, _snippet(item), f"{item.importance:.2f}", when)
    _console().print(table)


def cmd_forget_candidates(args: argparse.Namespace) -> None:
    from rich.table import Table

    with _open(args) as mem:
        candidates = mem.forget_candidates(_scope(args), limit=args.limit)
    table = Table(title="forget candidates (lowest standing first)")
    for column in ("id", "memory", "standing", "last used"):
        table.add_column(column)
    for c in candidates:
        used = c.item.last_accessed_at or c.item.created_at
        table.add_row(c.item.id, _snippet(c.item), f"{c.standing:.3f}", f"{used:%Y-%m-%d}")
    _console().print(table)


def cmd_purge(args: argparse.Namespace) -> None:
    from datetime import timedelta

    with _open(args) as mem:
        if not 0.0 <= args.grace_days <= 36_500:  # also refuses nan and inf
            raise InvalidInput(f"grace must be from 0 to 36500 days, got {args.grace_days}")
        report = mem.purge(grace=timedelta(days=args.grace_days))
    print(f"erased {len(report.erased)} memories")


def cmd_erase_user(args: argparse.Namespace) -> None:
    with _open(args) as mem:
        report = mem.erase_user(args.user_id)
    _print_rows(
        f"erased user {report.user_id}",
        [
            ("memories", len(report.memories)),
            ("derived facts", len(report.derived)),
            ("facts kept, unlinked", len(report.unlinked)),
            ("chat messages", report.messages),
        ],
    )


def cmd_build_directory(args: argparse.Namespace) -> None:
    from rich.progress import Progress

    with _open(args) as mem, Progress(transient=True) as progress:
        task = progress.add_task("listing memories by partition", total=None)
        partitions = mem.build_partition_directory(lambda n: progress.advance(task, n))
    print(f"listed {partitions} partitions; recalls now read them by id")


def cmd_mirror_partitions(args: argparse.Namespace) -> None:
    from rich.progress import Progress

    with _open(args) as mem, Progress(transient=True) as progress:
        task = progress.add_task("copying large partitions", total=None)
        copied = mem.mirror_large_partitions(lambda n: progress.advance(task, n), limit=args.limit)
    print(f"copied {copied} large partitions; recalls search them in the store")


def _options(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``--embedder-option KEY=VALUE`` pairs; a value that reads as JSON (a number, true)
    is taken as that, any other as text."""
    options: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"--embedder-option takes KEY=VALUE, got {pair!r}")
        try:
            options[key.strip()] = json.loads(value)
        except ValueError:
            options[key.strip()] = value
    return options


def cmd_reembed(args: argparse.Namespace) -> None:
    from memento_core._reembed import embedder_named

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.embedder:
        raise InvalidInput("reembed needs --embedder NAME: the embedder of the new space")
    embedder = embedder_named(args.embedder, **_options(args.embedder_option))
    path = None if args.url else (Path(args.path).expanduser() if args.path else None)
    shown = _ProgressLines() if not sys.stderr.isatty() else None
    with _progress(shown is None) as progress:
        task = progress.add_task("re-embedding", total=None) if progress else None

        def advance(done: int, total: int) -> None:
            if progress is not None and task is not None:
                progress.update(task, completed=done, total=total)
            elif shown is not None:
                shown(done, total)

        report = Memento.reembed(
            path,
            url=args.url,
            embedder=embedder,
            to=args.to,
            in_place=args.in_place,
            read_only=args.read_only,
            restart=args.restart,
            batch_size=args.batch_size,
            on_progress=advance,
        )
    where = "in place" if report.target == "in place" else f"into {report.target}"
    earlier = f", {report.kept} done by an earlier run" if report.resumed else ""
    print(
        f"re-embedded {report.memories} memories {where} with {report.embedder!r} "
        f"({report.dimension} dimensions; was {report.previous_embedder!r}): "
        f"{report.embedded} embedded{earlier}, {report.removed} removed, "
        f"{report.records} other records kept"
    )


class _ProgressLines:
    """Progress as plain lines on standard error (a log, a pipe): one a step."""

    def __call__(self, done: int, total: int) -> None:
        print(f"re-embedded {done}/{total} memories", file=sys.stderr, flush=True)


def _progress(shown: bool) -> Any:
    import contextlib

    from rich.progress import Progress

    return Progress(transient=True) if shown else contextlib.nullcontext()


def cmd_worker(args: argparse.Namespace) -> None:
    from memento_core._worker import MaintenanceReport

    def show(report: MaintenanceReport) -> None:
        facts = sum(len(s.written) for s in report.sleeps.values())
        print(
            f"{report.started_at:%Y-%m-%d %H:%M:%S} purged {len(report.purged.erased)}, "
            f"review cards {report.review_cards}, chats archived {len(report.chats_archived)}, "
            f"users slept {len(report.sleeps)}, facts written {facts}",
            flush=True,
        )

    with _open(args) as mem:
        mem.run_worker(interval=args.interval, passes=1 if args.once else None, on_report=show)


def cmd_plugins(args: argparse.Namespace) -> None:
    from rich.markup import escape
    from rich.table import Table

    from memento_core import plugins

    table = Table(title="memento plugins")
    for column in ("plugin", "distribution", "provides"):
        table.add_column(column)
    adapters = plugins.adapters()
    for name, dist in sorted(plugins.installed().items()):
        what = [f"adapter {a.name} ({a.framework})" for a in adapters.values() if a.package in dist]
        what += plugins.provided_by(name)
        table.add_row(name, dist, ", ".join(what))
    for name, failure in sorted(plugins.broken().items()):
        dist, _, reason = failure.partition(": ")
        table.add_row(name, dist, f"[red]broken[/red]: {escape(reason)}")
    _console().print(table)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memento-core")
    except PackageNotFoundError:  # running from a source tree that is not installed
        from memento_core import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_argument_group("store")
    where.add_argument(
        "--path",
        help="embedded store directory (default $MEMENTO_PATH, else ~/.local/share/memento "
        "or the platform's per-user data directory)",
    )
    where.add_argument("--url", help="Chroma server URL, e.g. http://127.0.0.1:8000")
    where.add_argument(
        "--read-only",
        action="store_true",
        help="open an embedded store without its write lock (another process may hold it)",
    )
    where.add_argument(
        "--embedder",
        metavar="NAME",
        help="the embedder a new store is created with, by its registered name (e.g. "
        "multilingual, with the [multilingual] extra; `plugins` lists them); an existing store "
        "opens in the space it recorded. For reembed: the new embedder (required), a registered "
        "name or an ONNX model (all-MiniLM-L6-v2-int8)",
    )
    who = common.add_argument_group("scope")
    for name in ("user", "agent", "project", "session"):
        who.add_argument(f"--{name}", help=f"{name} id")

    parser = argparse.ArgumentParser(prog=PROG, description="Memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")

    def add(
        name: str,
        handler: Callable[[argparse.Namespace], None],
        help: str,
        scope: Sequence[str] = SCOPE_FLAGS,
    ) -> Any:
        """A command; ``scope``: the scope flags it takes (any other is refused)."""
        sub = commands.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(handler=handler, scope_flags=tuple(scope))
        return sub

    sub = add("remember", cmd_remember, "store a memory and print its id")
    sub.add_argument("content", help="the text to remember, or - to read standard input")
    sub.add_argument("--type", default="episodic", choices=[t.value for t in MemoryType])
    sub.add_argument("--privacy", default="private", choices=[p.value for p in Privacy])
    sub.add_argument("--importance", type=float, default=0.5)
    sub.add_argument("--tag", action="append", help="a tag (repeatable)")
    sub.add_argument("--hotword", action="append", help="a hotword variant (repeatable, in order)")
    sub.add_argument("--title")
    sub.add_argument("--pin", action="store_true")
    sub.add_argument("--created-at", type=_time, help="ISO 8601 time, for imported history")

    sub = add("recall", cmd_recall, "recall memories for a query, with the score table")
    sub.add_argument("query")
    sub.add_argument("--limit", type=int, default=5)
    sub.add_argument("--type", action="append", choices=[t.value for t in MemoryType])
    sub.add_argument("--tag", action="append")
    sub.add_argument("--json", action="store_true", help="print JSON instead of a table")

    for name, handler, text in (
        ("get", cmd_get, "print one memory as JSON"),
        ("restore", cmd_restore, "bring back a soft-forgotten memory"),
        ("pin", cmd_pin, "pin a memory (never expires)"),
        ("unpin", cmd_pin, "unpin a memory"),
    ):
        add(name, handler, text).add_argument("id")

    sub = add("changes", cmd_changes, "print a memory's history, oldest first")
    sub.add_argument("id")
    sub.add_argument("--json", action="store_true", help="print JSON instead of lines")

    sub = add("forget", cmd_forget, "forget a memory (soft by default)")
    sub.add_argument("id")
    sub.add_argument("--hard", action="store_true", help="erase it with its links and feedback")

    sub = add("link", cmd_link, "link two memories")
    sub.add_argument("source")
    sub.add_argument("type", choices=[t.value for t in LinkType])
    sub.add_argument("target")
    sub.add_argument("--note")

    sub = add("feedback", cmd_feedback, "record feedback on a memory")
    sub.add_argument("id")
    sub.add_argument("kind", choices=[k.value for k in FeedbackKind])
    sub.add_argument("--score", type=float, default=1.0)
    sub.add_argument("--note")

    sub = add("export", cmd_export, "export the store", scope=("user",))
    sub.add_argument("--format", default="ndjson", choices=["ndjson", "markdown", "csv"])
    sub.add_argument("--output", "-o", help="file to write (default: standard output)")

    sub = add("import", cmd_import, "import an NDJSON export", scope=())  # records carry one
    sub.add_argument("file")

    add("stats", cmd_stats, "show what the store holds", scope=())  # the whole store
    add(
        "build-directory",
        cmd_build_directory,
        "list every memory in the partition directory (a store from an older version)",
        scope=(),
    )
    sub = add(
        "mirror-partitions",
        cmd_mirror_partitions,
        "copy partitions too large to load into collections of their own",
        scope=(),
    )
    sub.add_argument(
        "--limit", type=int, default=500, help="partitions past this many memories (500)"
    )
    plugin_parser = commands.add_parser("plugins", help="list installed plugins with versions")
    plugin_parser.set_defaults(handler=cmd_plugins)
    add("sleep", cmd_sleep, "consolidate a user's episodes into facts (--user)")

    sub = add("review", cmd_review, "list due reviews, or grade one: review ID GRADE")
    sub.add_argument("id", nargs="?")
    sub.add_argument("grade", nargs="?", type=int, default=3)

    sub = add("forget-candidates", cmd_forget_candidates, "list the soft-delete queue")
    sub.add_argument("--limit", type=int, default=20)

    sub = add(
        "purge",
        cmd_purge,
        "erase memories soft-deleted or expired past the grace period",
        scope=(),
    )
    sub.add_argument("--grace-days", type=float, default=30.0)

    sub = add(
        "erase-user", cmd_erase_user, "erase everything of one user (right to erasure)", scope=()
    )
    sub.add_argument("user_id")

    sub = add(
        "reembed",
        cmd_reembed,
        "re-embed the store into another embedder's space, keeping every record",
        scope=(),
    )
    # --embedder (every command's) names the new embedder here: a registered name (onnx,
    # openai-compatible, a plugin's) or an ONNX model (all-MiniLM-L6-v2-int8).
    sub.add_argument(
        "--embedder-option",
        action="append",
        metavar="KEY=VALUE",
        help="an option of the embedder (repeatable), e.g. model=all-MiniLM-L6-v2-int8",
    )
    target = sub.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", help="a new directory to build the re-embedded store in")
    target.add_argument(
        "--in-place", action="store_true", help="switch this store to the new space when done"
    )
    sub.add_argument("--batch-size", type=int, default=256, help="memories per step (256)")
    sub.add_argument(
        "--restart",
        action="store_true",
        help="in place: discard an unfinished re-embedding into another embedder",
    )

    sub = add(
        "worker", cmd_worker, "run purge, review scheduling and sleep on an interval", scope=()
    )
    sub.add_argument("--interval", type=float, default=300.0, help="seconds between passes")
    sub.add_argument("--once", action="store_true", help="run one pass and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "url", None) and getattr(args, "path", None):
        parser.error("give either --path or --url, not both")
    try:
        _check_scope_flags(args)
        args.handler(args)
    except MementoError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
