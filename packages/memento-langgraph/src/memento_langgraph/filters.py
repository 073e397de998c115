"""LangGraph's store filters on item values: plain values and ``$eq $ne $gt $gte $lt $lte``.

Values live in each memory's JSON payload, which Memento does not index field by field, so the
store evaluates these filters on the candidates core returns (namespace and indexing are pushed
into core's query as tags; only the value test runs here).

Rules: a plain value matches by equality (dictionaries match nested, field by field; lists match
element by element). Operators compare numbers with numbers and strings with strings; any other
pairing, or a missing field, fails the comparison (``$ne`` passes it). Booleans are not numbers.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from memento_core import InvalidFilter

__all__ = ["check_filter", "matches_filter"]

_ORDERINGS: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}
OPERATORS = frozenset({"$eq", "$ne", *_ORDERINGS})


def check_filter(value_filter: Mapping[str, Any] | None) -> None:
    """Refuse unknown operators up front, before anything is read, wherever they are.

    Checked eagerly and everywhere (nested dictionaries, lists, operands) so a bad filter is an
    error even when no item would have reached the bad part. A top-level key starting with
    ``$`` (``$or``, ``$and``, ``$where``) is query syntax, not a field name: refused too.
    """
    if value_filter is None:
        return
    if not isinstance(value_filter, Mapping):
        raise InvalidFilter(f"a store filter is a mapping of field to value, got {value_filter!r}")
    dollar = sorted(k for k in value_filter if isinstance(k, str) and k.startswith("$"))
    if dollar:
        raise InvalidFilter(
            f"filter key(s) {', '.join(dollar)} look like operators; a filter maps field names "
            f"to values or to {{operator: operand}} with {', '.join(sorted(OPERATORS))}"
        )
    for condition in value_filter.values():
        _check_condition(condition)


def _check_condition(condition: Any) -> None:
    if isinstance(condition, Mapping):
        if _is_operation(condition):
            unknown = sorted(map(str, set(condition) - OPERATORS))
            if unknown:
                raise InvalidFilter(
                    f"unknown filter operator(s) {', '.join(unknown)}; "
                    f"supported: {', '.join(sorted(OPERATORS))}"
                )
        for value in condition.values():
            _check_condition(value)
    elif isinstance(condition, (list, tuple)):
        for value in condition:
            _check_condition(value)


def matches_filter(value: Mapping[str, Any], value_filter: Mapping[str, Any] | None) -> bool:
    if not value_filter:
        return True
    return all(_matches(value.get(field), wanted) for field, wanted in value_filter.items())


def _is_operation(condition: Mapping[str, Any]) -> bool:
    return any(isinstance(k, str) and k.startswith("$") for k in condition)


def _matches(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if _is_operation(wanted):
            return all(_apply(op, actual, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(
            _matches(actual.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(wanted)
            and all(_matches(a, w) for a, w in zip(actual, wanted))
        )
    return _equal(actual, wanted)


def _apply(op: str, actual: Any, operand: Any) -> bool:
    if op == "$eq":
        return _matches(actual, operand)
    if op == "$ne":
        return not _matches(actual, operand)
    compare = _ORDERINGS.get(op)
    if compare is None:
        raise InvalidFilter(f"unknown filter operator {op!r}")
    if _is_number(actual) and _is_number(operand):
        return compare(actual, operand)
    if isinstance(actual, str) and isinstance(operand, str):
        return compare(actual, operand)
    return False


def _equal(actual: Any, wanted: Any) -> bool:
    # JSON has one number type, and True == 1 in Python: keep booleans apart from numbers.
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return isinstance(actual, bool) and isinstance(wanted, bool) and actual == wanted
    return bool(actual == wanted)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
