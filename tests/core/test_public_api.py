"""``memento_core.__all__`` is honest: sorted, resolvable, and holding every exception."""

from __future__ import annotations

import inspect

import memento_core
import memento_core.errors


def test_every_name_in_all_exists() -> None:
    missing = [name for name in memento_core.__all__ if not hasattr(memento_core, name)]
    assert missing == []


def isort_order(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps: CONSTANTS, then Classes, then everything else."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted_without_duplicates() -> None:
    names = list(memento_core.__all__)
    assert names == sorted(names, key=isort_order)
    assert len(names) == len(set(names))


def test_every_exception_is_exported() -> None:
    errors = [
        name
        for name, value in vars(memento_core.errors).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == memento_core.errors.__name__
    ]
    assert "MementoError" in errors
    assert len(errors) >= 10
    assert sorted(set(errors) - set(memento_core.__all__)) == []
    for name in errors:
        assert getattr(memento_core, name) is getattr(memento_core.errors, name)


def test_every_exception_descends_from_memento_error() -> None:
    for name in memento_core.__all__:
        value = getattr(memento_core, name)
        if inspect.isclass(value) and issubclass(value, BaseException):
            assert issubclass(value, memento_core.MementoError), name


def test_the_package_has_a_version() -> None:
    assert isinstance(memento_core.__version__, str)
    assert memento_core.__version__.count(".") >= 1
