"""The data model: scopes, memory items, enums and the exception tree."""

from __future__ import annotations

import dataclasses

import pytest

from memento_core import (
    MAX_CONTENT_CHARS,
    EmbedderMismatch,
    FeedbackKind,
    InvalidContent,
    InvalidFilter,
    InvalidImport,
    InvalidInput,
    InvalidScope,
    LinkType,
    MementoError,
    MemoryItem,
    MemoryNotFound,
    MemoryType,
    MissingDependency,
    NotAMementoStore,
    Privacy,
    Scope,
    StoreError,
    StoreUnavailable,
)

# ------------------------------------------------------------------------------------ Scope


def test_scope_defaults_to_nobody() -> None:
    assert Scope().as_dict() == {
        "user_id": None,
        "agent_id": None,
        "project_id": None,
        "session_id": None,
    }


def test_scope_keeps_plain_strings_including_unicode() -> None:
    scope = Scope(user_id="김민수", agent_id="planner", project_id="p-1", session_id="s 1")
    assert scope.as_dict() == {
        "user_id": "김민수",
        "agent_id": "planner",
        "project_id": "p-1",
        "session_id": "s 1",
    }


def test_scope_with_session_replaces_only_the_session() -> None:
    scope = Scope(user_id="u", project_id="p", session_id="old")
    moved = scope.with_session("new")
    assert moved == Scope(user_id="u", project_id="p", session_id="new")
    assert scope.session_id == "old"
    assert scope.with_session(None).session_id is None


def test_scope_is_immutable_and_hashable() -> None:
    scope = Scope(user_id="u")
    with pytest.raises(dataclasses.FrozenInstanceError):
        scope.user_id = "other"  # type: ignore[misc]  # the point: assignment must fail
    assert {scope, Scope(user_id="u")} == {Scope(user_id="u")}


@pytest.mark.parametrize("field", ["user_id", "agent_id", "project_id", "session_id"])
@pytest.mark.parametrize(
    "value",
    [
        {"$ne": "me"},
        {"$in": ["a", "b"]},
        ["me"],
        42,
        b"me",
        "",
        "   ",
        "x" * 257,
        "line\nbreak",
        "nul\x00byte",
        "\ud800",
    ],
    ids=[
        "operator-ne",
        "operator-in",
        "list",
        "int",
        "bytes",
        "empty",
        "blank",
        "too-long",
        "newline",
        "nul",
        "lone-surrogate",
    ],
)
def test_scope_rejects_anything_but_a_plain_short_string(field: str, value: object) -> None:
    with pytest.raises(InvalidScope, match=field):
        Scope(**{field: value})  # type: ignore[arg-type]  # deliberately the wrong type


def test_scope_accepts_the_longest_allowed_value() -> None:
    assert Scope(user_id="x" * 256).user_id == "x" * 256


# ------------------------------------------------------------------------------- MemoryItem


def test_memory_item_defaults() -> None:
    item = MemoryItem(id="m1", content="hello")
    assert item.type is MemoryType.EPISODIC
    assert item.privacy is Privacy.PRIVATE
    assert item.importance == 0.5
    assert item.pinned is False
    assert item.tags == ()
    assert item.hotwords == ()
    assert item.access_count == 0
    assert item.created_at.utcoffset() is not None, "created_at must be timezone-aware"
    assert item.is_deleted is False
    assert item.user_id is None


def test_memory_item_exposes_its_user_and_deletion() -> None:
    deleted = MemoryItem(id="m1", content="hello", scope=Scope(user_id="ann"))
    deleted = dataclasses.replace(deleted, deleted_at=deleted.created_at)
    assert deleted.user_id == "ann"
    assert deleted.is_deleted is True


def test_memory_item_is_immutable() -> None:
    item = MemoryItem(id="m1", content="hello")
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.content = "changed"  # type: ignore[misc]  # the point: assignment must fail


# ------------------------------------------------------------------------------------ enums


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        (MemoryType, ["working", "episodic", "semantic", "procedural"]),
        (Privacy, ["private", "team", "public"]),
        (LinkType, ["cause_of", "derived_from", "duplicates", "contradicts"]),
        (FeedbackKind, ["used", "edited", "neglected", "helpful", "not_helpful"]),
    ],
)
def test_enums_have_the_designed_values_and_compare_as_strings(
    kind: type[MemoryType], values: list[str]
) -> None:
    assert [member.value for member in kind] == values
    for value in values:
        assert kind(value) == value


def test_max_content_chars_is_a_sane_limit() -> None:
    assert isinstance(MAX_CONTENT_CHARS, int)
    assert 1_000 <= MAX_CONTENT_CHARS <= 1_000_000


# ----------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("error", "parents"),
    [
        (InvalidInput, (MementoError, ValueError)),
        (InvalidContent, (InvalidInput, ValueError)),
        (InvalidScope, (InvalidInput, ValueError)),
        (InvalidFilter, (InvalidInput, ValueError)),
        (InvalidImport, (InvalidInput, ValueError)),
        (MemoryNotFound, (MementoError, KeyError)),
        (StoreError, (MementoError, RuntimeError)),
        (NotAMementoStore, (StoreError,)),
        (EmbedderMismatch, (StoreError,)),
        (StoreUnavailable, (StoreError,)),
        (MissingDependency, (MementoError, ImportError)),
    ],
)
def test_exception_tree(error: type[Exception], parents: tuple[type[Exception], ...]) -> None:
    for parent in parents:
        assert issubclass(error, parent), f"{error.__name__} should subclass {parent.__name__}"
    assert issubclass(error, MementoError)


def test_memory_not_found_is_a_key_error_that_names_the_id() -> None:
    error = MemoryNotFound("abc123")
    assert error.memory_id == "abc123"
    assert "abc123" in str(error)
    with pytest.raises(KeyError):
        raise error


def test_invalid_import_names_the_line() -> None:
    error = InvalidImport("not JSON", line=7)
    assert error.line == 7
    assert str(error) == "line 7: not JSON"
    assert isinstance(error, ValueError)


def test_embedder_mismatch_says_what_was_stored_and_what_was_given() -> None:
    error = EmbedderMismatch(stored="a", stored_dimension=384, given="b", given_dimension=8)
    message = str(error)
    assert "'a'" in message and "384" in message
    assert "'b'" in message and "8 dimensions" in message
    assert "memento-core reembed" in message
    assert (error.stored, error.given) == ("a", "b")


def test_missing_dependency_says_what_to_install() -> None:
    error = MissingDependency("sentence-transformers", "embedding text")
    assert error.package == "sentence-transformers"
    assert "pip install sentence-transformers" in str(error)
    assert isinstance(error, ImportError)
