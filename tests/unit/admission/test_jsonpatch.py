"""``jsonpatch.apply``: RFC 6902's move and copy, and a clear PatchError for operations that cannot apply."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.admission import jsonpatch


def test_move_takes_the_value_away_from_its_old_place() -> None:
    document = {"spec": {"a": {"x": 1}, "list": [1, 2]}}
    patched = jsonpatch.apply(
        document,
        [
            {"op": "move", "from": "/spec/a", "path": "/spec/b"},
            {"op": "move", "from": "/spec/list/0", "path": "/spec/list/-"},
        ],
    )
    assert patched == {"spec": {"b": {"x": 1}, "list": [2, 1]}}
    assert document == {"spec": {"a": {"x": 1}, "list": [1, 2]}}  # the input is left alone


def test_copy_keeps_the_source_and_the_copy_is_independent() -> None:
    patched = jsonpatch.apply(
        {"labels": {"app": "a"}, "items": ["x"]},
        [
            {"op": "copy", "from": "/labels", "path": "/annotations"},
            {"op": "add", "path": "/annotations/extra", "value": "1"},
            {"op": "copy", "from": "/items/0", "path": "/items/0"},
        ],
    )
    assert patched == {
        "labels": {"app": "a"},
        "annotations": {"app": "a", "extra": "1"},
        "items": ["x", "x"],
    }


def test_move_and_copy_unescape_their_from_pointer() -> None:
    patched = jsonpatch.apply({"a/b": 1, "c~d": 2}, [{"op": "move", "from": "/a~1b", "path": "/e"}])
    assert patched == {"c~d": 2, "e": 1}
    patched = jsonpatch.apply(patched, [{"op": "copy", "from": "/c~0d", "path": "/f"}])
    assert patched == {"c~d": 2, "e": 1, "f": 2}


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        ({"op": "move", "from": "/missing", "path": "/b"}, "'missing' not found"),
        ({"op": "copy", "path": "/b"}, "has no valid from"),
        ({"op": "copy", "from": "a", "path": "/b"}, "has no valid from: 'a'"),
        ({"op": "add", "value": 1}, "has no valid path"),
        ({"op": "add", "path": "/b"}, "operation add at /b has no value"),
        ({"op": "merge", "path": "/b", "value": 1}, "unexpected operation 'merge'"),
        ({"op": "add", "path": "/list/3", "value": 1}, "bad list index '3'"),
        ({"op": "remove", "path": "/list/2"}, "bad list index '2'"),
        ({"op": "replace", "path": "/list/x", "value": 1}, "bad list index 'x'"),
    ],
)
def test_an_operation_that_cannot_apply_is_a_patch_error(operation: dict[str, Any], message: str) -> None:
    with pytest.raises(jsonpatch.PatchError, match=message):
        jsonpatch.apply({"a": 1, "list": [1, 2]}, [operation])


def test_an_operation_that_is_not_an_object_is_a_patch_error() -> None:
    with pytest.raises(jsonpatch.PatchError, match="a JSON patch operation is an object"):
        jsonpatch.apply({}, ["add"])  # type: ignore[list-item]
