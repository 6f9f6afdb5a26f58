"""virt-api against objects beyond the input limits: a clean refusal, and a short log."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from kubevirt.admission.limits import MAX_NESTING_DEPTH, MAX_OBJECT_BYTES
from kubevirt.virt_api.webhooks.routes import VM_MUTATE, VMI_MUTATE, VMI_VALIDATE_CREATE
from kubevirt.virt_api.webhooks.server import DEFAULT_MAX_BODY_BYTES

TESTDATA = Path(__file__).parents[2] / "testdata" / "conformance" / "vmi" / "valid"
VMI_GVR = {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstances"}
VM_GVR = {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachines"}


def vmi() -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TESTDATA / "001-minimal-containerdisk.json").read_text())
    return value


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"x": value}
    return value


def request(resource: dict[str, str], obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "uid": str(uuid.uuid4()),
        "operation": "CREATE",
        "resource": resource,
        "namespace": "default",
        "userInfo": {"username": "alice"},
        "object": obj,
    }


@pytest.fixture(scope="module")
def full_size_api(tmp_path_factory: pytest.TempPathFactory, launch_virt_api: Any) -> Any:
    """virt-api with its default request limit (the shared fixture lowers it)."""
    api = launch_virt_api(
        tmp_path_factory.mktemp("virt-api-limits"), [f"--max-request-bytes={DEFAULT_MAX_BODY_BYTES}"]
    )
    yield api
    api.stop()


@pytest.mark.parametrize("path", [VMI_MUTATE, VMI_VALIDATE_CREATE])
def test_deep_nesting_is_refused_with_the_path_and_logged_in_one_short_line(
    full_size_api: Any, path: str
) -> None:
    deep = vmi()
    deep["spec"]["domain"]["clock"] = {"utc": {}, "x": nested(900)}
    before = full_size_api.log_file.stat().st_size
    answer = full_size_api.review(path, request(VMI_GVR, deep))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    message = answer["status"]["message"]
    assert message.startswith(
        f"request.object: nested deeper than {MAX_NESTING_DEPTH} levels at spec.domain.clock.x"
    )
    assert full_size_api.alive()
    logged = full_size_api.log_file.read_bytes()[before:]
    assert b"Traceback" not in logged
    assert len(logged) < 4096


def test_deep_template_of_a_vm_is_refused(full_size_api: Any) -> None:
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "deep", "namespace": "default"},
        "spec": {"runStrategy": "Always", "template": {"spec": {"x": nested(500)}}},
    }
    answer = full_size_api.review(VM_MUTATE, request(VM_GVR, vm))
    assert answer["allowed"] is False
    assert "nested deeper than" in answer["status"]["message"]


def test_an_object_above_the_api_servers_size_limit_is_refused(full_size_api: Any) -> None:
    big = vmi()
    big["metadata"]["annotations"] = {"filler": "x" * MAX_OBJECT_BYTES}
    answer = full_size_api.review(VMI_VALIDATE_CREATE, request(VMI_GVR, big))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"] == (
        f"request.object: object is larger than the limit of {MAX_OBJECT_BYTES} bytes"
    )


def test_an_object_just_within_the_limit_is_admitted(full_size_api: Any) -> None:
    big = vmi()
    big["metadata"]["annotations"] = {"filler": "x" * (MAX_OBJECT_BYTES - 4096)}
    answer = full_size_api.review(VMI_VALIDATE_CREATE, request(VMI_GVR, big))
    assert "larger than the limit" not in json.dumps(answer)
