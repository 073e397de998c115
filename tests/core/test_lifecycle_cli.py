"""The lifecycle commands: ``memento-core sleep|review|forget-candidates|purge|erase-user|worker``.

Each runs through ``memento_core.cli.main`` on an embedded store; the shared model stands in
for the one the command would load. Bad input exits 2 with one line on standard error.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from memento_core import Memento, MemoryNotFound, MemoryType, Scope
from memento_core.cli import main

ANN = Scope(user_id="ann")
DAY = timedelta(days=1)
PET = (
    "Ann adopted a beagle puppy called Biscuit from the animal shelter.",
    "Biscuit, Ann's beagle puppy, chews her slippers every morning.",
    "Ann takes her beagle Biscuit to puppy training class on Sundays.",
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def row(out: str, label: str) -> int:
    """The number in a report table's row."""
    found = re.search(rf"{re.escape(label)}\W+(\d+)", out)
    assert found, f"no {label!r} row in:\n{out}"
    return int(found.group(1))


def assert_one_line_error(result: tuple[int, str, str], *fragments: str) -> None:
    code, _, err = result
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memento-core: error: "), err
    for fragment in fragments:
        assert fragment in lines[0]


def test_sleep_prints_its_report_and_the_facts(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, where = cli_store
    for n, text in enumerate(PET):
        mem.remember(text, scope=ANN, created_at=datetime(2024, 5, 1, n, tzinfo=timezone.utc))

    code, out, _ = run(capsys, "sleep", *where, "--user", "ann")
    assert code == 0
    assert row(out, "episodes considered") == 3 and row(out, "facts written") == 1
    assert row(out, "derived_from links") == 3 and row(out, "duplicates merged") == 0
    fact_ids = re.findall(r"fact ([0-9a-f]{32})", out)
    assert len(fact_ids) == 1
    assert mem.get(fact_ids[0]).type is MemoryType.SEMANTIC

    code, out, _ = run(capsys, "sleep", *where, "--user", "ann")  # nothing left to do
    assert code == 0 and row(out, "facts written") == 0 and "fact " not in out
    code, out, _ = run(capsys, "sleep", *where, "--user", "nobody")  # an empty scope
    assert code == 0 and row(out, "episodes considered") == 0


def test_review_lists_due_cards_and_grades_one(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, where = cli_store
    due = mem.remember("Ann's visa interview is on 9 June", scope=ANN, importance=0.9)
    mem.review(due, 0, now=datetime.now(timezone.utc) - 2 * DAY)  # due since yesterday
    not_due = mem.remember("Ann's passport expires in 2031", scope=ANN, importance=0.9)

    code, out, _ = run(capsys, "review", *where, "--user", "ann")
    assert code == 0 and due in out and not_due not in out

    code, out, _ = run(capsys, "review", *where, due, "5")
    expected = (datetime.now(timezone.utc) + 3 * DAY).date()
    assert code == 0 and out.strip() == f"next review of {due} on {expected:%Y-%m-%d}"
    assert mem.get(due).review_step == 1


def test_review_refuses_a_bad_grade_or_id_in_one_line(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, where = cli_store
    memory_id = mem.remember("Ann's visa interview is on 9 June", scope=ANN, importance=0.9)
    before = mem.get(memory_id)
    assert_one_line_error(run(capsys, "review", *where, memory_id, "9"), "grade")
    assert_one_line_error(run(capsys, "review", *where, memory_id, "-1"), "grade")
    assert_one_line_error(run(capsys, "review", *where, "f" * 32, "3"), "no memory")
    assert mem.get(memory_id) == before
    with pytest.raises(SystemExit) as exit_info:  # not a number at all: argparse's own error
        main(["review", *where, memory_id, "excellent"])
    assert exit_info.value.code == 2
    assert "invalid int value: 'excellent'" in capsys.readouterr().err


def test_forget_candidates_lists_the_queue(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, where = cli_store
    long_ago = datetime.now(timezone.utc) - 200 * DAY
    old = mem.remember("Ann once said the canteen soup was cold", scope=ANN, created_at=long_ago)
    new = mem.remember("Ann is at the dentist today", scope=ANN)

    code, out, _ = run(capsys, "forget-candidates", *where, "--user", "ann")
    assert code == 0 and old in out and new not in out
    assert_one_line_error(run(capsys, "forget-candidates", *where, "--limit", "0"), "limit")


def test_purge_erases_past_the_grace_period(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, where = cli_store
    memory_id = mem.remember("Ann's old wifi password was hunter2", scope=ANN)
    mem.forget(memory_id)

    assert run(capsys, "purge", *where)[1].strip() == "erased 0 memories"  # 30-day grace
    assert mem.get(memory_id, include_deleted=True).is_deleted
    assert run(capsys, "purge", *where, "--grace-days", "0")[1].strip() == "erased 1 memories"
    with pytest.raises(MemoryNotFound):
        mem.get(memory_id, include_deleted=True)
    assert_one_line_error(run(capsys, "purge", *where, "--grace-days", "-1"), "grace")


@pytest.mark.parametrize("days", ["nan", "inf", "1e12"])
def test_purge_refuses_a_grace_period_that_is_no_duration(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str], days: str
) -> None:
    mem, where = cli_store
    memory_id = mem.remember("Ann's old wifi password was hunter2", scope=ANN)
    mem.forget(memory_id)
    assert_one_line_error(run(capsys, "purge", *where, "--grace-days", days), "grace")
    assert mem.get(memory_id, include_deleted=True).is_deleted


def test_erase_user_prints_what_went_and_unknown_users_are_a_no_op(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, where = cli_store
    ann = [mem.remember(text, scope=ANN) for text in PET]
    ben = mem.remember("Ben looks after Biscuit on weekends", scope=Scope(user_id="ben"))

    code, out, _ = run(capsys, "erase-user", *where, "ann")
    assert code == 0 and "erased user ann" in out and row(out, "memories") == 3
    for memory_id in ann:
        with pytest.raises(MemoryNotFound):
            mem.get(memory_id, include_deleted=True)
    assert mem.get(ben).content == "Ben looks after Biscuit on weekends"

    before = list(mem.export())
    code, out, _ = run(capsys, "erase-user", *where, "nobody")
    assert code == 0 and row(out, "memories") == 0 and row(out, "derived facts") == 0
    assert list(mem.export()) == before
    assert_one_line_error(run(capsys, "erase-user", *where, ""), "user_id")
    assert list(mem.export()) == before


def test_worker_once_runs_one_pass_and_reports_it(
    cli_store: tuple[Memento, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    mem, where = cli_store
    for n, text in enumerate(PET):
        mem.remember(text, scope=ANN, created_at=datetime(2024, 5, 1, n, tzinfo=timezone.utc))
    expired = mem.remember("a boarding pass", expires_at=datetime.now(timezone.utc) - 40 * DAY)

    code, out, _ = run(capsys, "worker", *where, "--once")
    assert code == 0
    (line,) = out.strip().splitlines()
    assert line.endswith(
        "purged 1, review cards 0, chats archived 0, users slept 1, facts written 1"
    ), line
    with pytest.raises(MemoryNotFound):
        mem.get(expired, include_deleted=True)
    assert_one_line_error(run(capsys, "worker", *where, "--interval", "-5"), "interval")
