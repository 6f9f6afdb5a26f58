"""Subresource request bodies: JSON or YAML, optional, typed as KubeVirt's option structs."""

from __future__ import annotations

import pytest

from kubevirt.virt_api.rest.bodies import Options, decode_options
from kubevirt.virt_api.rest.status import StatusError


def test_an_empty_body_is_no_options() -> None:
    assert decode_options("StopOptions", b"") == Options()
    assert decode_options("StopOptions", b"  \n") == Options()


def test_json_and_yaml_bodies() -> None:
    assert decode_options("StopOptions", b'{"gracePeriod": 0, "dryRun": ["All"]}') == Options(
        dry_run=["All"], grace_period=0
    )
    assert decode_options("StartOptions", b"paused: true\n") == Options(paused=True)
    assert decode_options("RestartOptions", b'{"gracePeriodSeconds": 0}').grace_period == 0
    assert decode_options("MigrateOptions", b'{"addedNodeSelector": {"a": "b"}}').added_node_selector == {
        "a": "b"
    }


def test_unknown_fields_are_ignored() -> None:
    assert decode_options("PauseOptions", b'{"kind": "PauseOptions", "other": 1}') == Options()


@pytest.mark.parametrize(
    ("kind", "body", "reason"),
    [
        (
            "StopOptions",
            b'{"gracePeriod": "soon"}',
            "json: cannot unmarshal string into Go struct field StopOptions.gracePeriod of type int64",
        ),
        (
            "StartOptions",
            b'{"paused": "yes"}',
            "json: cannot unmarshal string into Go struct field StartOptions.paused of type bool",
        ),
        ("PauseOptions", b"[1]", "json: cannot unmarshal array into Go value of type v1.PauseOptions"),
    ],
)
def test_mistyped_fields_are_a_bad_request(kind: str, body: bytes, reason: str) -> None:
    with pytest.raises(StatusError) as caught:
        decode_options(kind, body)
    assert (caught.value.code, caught.value.message) == (
        400,
        f"Can not unmarshal Request body to struct, error: {reason}",
    )


def test_malformed_json_is_a_bad_request() -> None:
    with pytest.raises(StatusError) as caught:
        decode_options("StopOptions", b'{"gracePeriod": ')
    assert caught.value.code == 400
    assert caught.value.message.startswith("Can not unmarshal Request body to struct, error: ")
