"""Error mapping from Status bodies, and REST paths of resources."""

from __future__ import annotations

import json

import pytest

from kubevirt.client import (
    LEASES,
    NODES,
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    AlreadyExistsError,
    ApiError,
    ConflictError,
    GoneError,
    InvalidError,
    NotFoundError,
)
from kubevirt.client.errors import error_from_response
from kubevirt.client.resources import INSTANCETYPE_RESOURCES


def status(code: int, reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "code": code, "reason": reason, "message": message}).encode()


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (404, "NotFound", NotFoundError),
        (409, "Conflict", ConflictError),
        (409, "AlreadyExists", AlreadyExistsError),
        (422, "Invalid", InvalidError),
        (410, "Expired", GoneError),
        (500, "InternalError", ApiError),
    ],
)
def test_status_bodies_become_typed_errors(code: int, reason: str, cls: type[ApiError]) -> None:
    error = error_from_response(code, status(code, reason, "the message"))
    assert type(error) is cls
    assert (error.status, error.reason, error.message) == (code, reason, "the message")


def test_a_body_that_is_not_json_is_the_message() -> None:
    error = error_from_response(502, b"bad gateway")
    assert (error.status, error.message) == (502, "bad gateway")


def test_paths() -> None:
    assert PODS.path("ns", "p", "status") == "/api/v1/namespaces/ns/pods/p/status"
    assert PODS.path() == "/api/v1/pods"
    assert NODES.path(None, "n1") == "/api/v1/nodes/n1"
    assert LEASES.api_version == "coordination.k8s.io/v1"
    vmis = "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstances"
    assert VIRTUAL_MACHINE_INSTANCES.path("ns") == vmis
    with pytest.raises(ValueError, match="cluster-scoped"):
        NODES.path("ns", "n1")


def test_instancetype_resources_follow_their_scope() -> None:
    cluster = INSTANCETYPE_RESOURCES["VirtualMachineClusterInstancetype"]
    assert cluster.path(None, "u1.small") == (
        "/apis/instancetype.kubevirt.io/v1beta1/virtualmachineclusterinstancetypes/u1.small"
    )
    preference = INSTANCETYPE_RESOURCES["VirtualMachinePreference"]
    assert preference.path("ns", "fedora") == (
        "/apis/instancetype.kubevirt.io/v1beta1/namespaces/ns/virtualmachinepreferences/fedora"
    )
    assert not INSTANCETYPE_RESOURCES["VirtualMachineClusterPreference"].namespaced
    assert sorted(INSTANCETYPE_RESOURCES) == [
        "VirtualMachineClusterInstancetype",
        "VirtualMachineClusterPreference",
        "VirtualMachineInstancetype",
        "VirtualMachinePreference",
    ]
