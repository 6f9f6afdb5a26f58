"""The size, nesting and value-count limits every input passes before any rule sees it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubevirt.input_limits import (
    MAX_NESTING_DEPTH,
    MAX_OBJECT_BYTES,
    InputLimitError,
    check_nesting,
    load_json,
)


def nested(levels: int) -> dict[str, Any]:
    """``levels`` objects inside one another: {"x": {"x": ... {}}}."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"x": value}
    return value


def test_nesting_at_the_limit_is_accepted() -> None:
    check_nesting(nested(MAX_NESTING_DEPTH))
    check_nesting([[{"a": 1}]])


def test_nesting_past_the_limit_names_the_path() -> None:
    value = {"spec": {"domain": {"clock": nested(MAX_NESTING_DEPTH)}}}
    with pytest.raises(InputLimitError, match=r"nested deeper than 100 levels at spec\.domain\.clock\.x\.x"):
        check_nesting(value)


def test_list_indexes_appear_in_the_path() -> None:
    value: Any = "leaf"
    for _ in range(MAX_NESTING_DEPTH + 1):
        value = [value]
    with pytest.raises(InputLimitError, match=r"at \[0\]\[0\]"):
        check_nesting(value)


def test_shared_subtrees_are_counted_every_time() -> None:
    # What YAML aliases make: a few objects, repeated into billions of values.
    value: list[Any] = ["x"] * 10
    for _ in range(9):
        value = [value] * 10
    with pytest.raises(InputLimitError, match="more than"):
        check_nesting(value)


def test_json_too_deep_for_the_parser_is_a_limit_error() -> None:
    with pytest.raises(InputLimitError, match="nested deeper"):
        load_json("[" * 100_000 + "]" * 100_000)


def test_json_above_the_object_limit_is_refused_before_parsing() -> None:
    body = json.dumps({"data": "x" * MAX_OBJECT_BYTES})
    with pytest.raises(InputLimitError, match=f"larger than the limit of {MAX_OBJECT_BYTES} bytes"):
        load_json(body)


def test_keys_in_the_path_are_escaped_onto_one_line() -> None:
    value = {"line\nbreak": nested(MAX_NESTING_DEPTH)}
    with pytest.raises(InputLimitError) as refused:
        check_nesting(value)
    assert str(refused.value).startswith("nested deeper than 100 levels at line\\nbreak.x")
    assert "\n" not in str(refused.value)
