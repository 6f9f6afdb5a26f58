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


# -- bounds -------------------------------------------------------------------------------------------

BODY_LIMIT = 64 * 1024


def _refusal(kind: str, body: bytes) -> str:
    with pytest.raises(StatusError) as caught:
        decode_options(kind, body)
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    return caught.value.message


def test_a_body_above_64_kib_is_refused_unparsed() -> None:
    padded = b'{"dryRun": ["All"]}' + b" " * (BODY_LIMIT - 19)
    assert decode_options("StopOptions", padded) == Options(dry_run=["All"])
    assert _refusal("StopOptions", padded + b" ") == (
        "Can not unmarshal Request body to struct, error: request body is larger than 65536 bytes"
    )


@pytest.mark.parametrize(
    "body",
    [
        b'{"dryRun": ' + b"[" * 30000 + b"]" * 30000 + b"}",
        b"dryRun: " + b"[" * 101 + b"]" * 101,
        b"dryRun:\n" + b"- " * 101 + b"x\n",
        b"paused: " + b"{a: " * 101 + b"1" + b"}" * 101,
        b"- " * 20000 + b"x",  # beyond what libyaml itself nests
    ],
)
def test_nesting_beyond_100_levels_is_refused_with_the_reason(body: bytes) -> None:
    assert "nested deeper than" in _refusal("StartOptions", body)


def test_yaml_aliases_cannot_make_the_options_larger_than_a_body() -> None:
    anchor = b"x" * 30000
    keys = b", ".join(b"k%d: *s" % index for index in range(100))
    body = b"anchor: &s " + anchor + b"\naddedNodeSelector: {" + keys + b"}\n"
    assert len(body) < BODY_LIMIT
    assert _refusal("MigrateOptions", body).endswith("options expand beyond 65536 bytes")
    small = b"anchor: &s node01\naddedNodeSelector: {a: *s, b: *s}\n"
    assert decode_options("MigrateOptions", small).added_node_selector == {"a": "node01", "b": "node01"}


@pytest.mark.parametrize(
    "body",
    [
        b"paused: !!python/object/apply:os.system ['true']",
        b"paused: " + b"1" * 5000,  # an integer too long for int()
        b'{"gracePeriod": ' + b"1" * 5000 + b"}",
        b"? [a]\n: b\n",  # an unhashable key
        b"\x00\xff",
        b"a: b\n---\nc: d\n",
    ],
)
def test_what_the_parsers_reject_is_a_bad_request(body: bytes) -> None:
    assert _refusal("StartOptions", body).startswith("Can not unmarshal Request body to struct, error: ")
