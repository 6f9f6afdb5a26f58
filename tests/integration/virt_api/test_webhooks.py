"""Real HTTPS AdmissionReviews against a running virt-api: answers, codes, causes, patches, abuse and
input beyond the limits."""

from __future__ import annotations

import base64
import copy
import json
import socket
import ssl
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kubevirt.admission import jsonpatch
from kubevirt.input_limits import MAX_NESTING_DEPTH, MAX_OBJECT_BYTES
from kubevirt.virt_api.webhooks.routes import VM_MUTATE, VMI_MUTATE, VMI_VALIDATE_CREATE
from kubevirt.virt_api.webhooks.server import DEFAULT_MAX_BODY_BYTES

TESTDATA = Path(__file__).parents[2] / "testdata" / "conformance" / "vmi" / "valid"
VMI_GVR = {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstances"}
VM_GVR = {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachines"}
VMIM_GVR = {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstancemigrations"}


def defaulted_vmi() -> dict[str, Any]:
    vmi: dict[str, Any] = json.loads((TESTDATA / "001-minimal-containerdisk.defaults.json").read_text())
    return vmi


def raw_vmi() -> dict[str, Any]:
    vmi: dict[str, Any] = json.loads((TESTDATA / "001-minimal-containerdisk.json").read_text())
    return vmi


def request(resource: dict[str, str], obj: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "operation": "CREATE",
        "resource": resource,
        "namespace": "default",
        "userInfo": {"username": "alice"},
        "object": obj,
    }
    base.update(extra)
    return base


def test_healthz(virt_api: Any) -> None:
    status, body = virt_api.request("GET", "/healthz")
    assert status == 200
    health = json.loads(body)
    assert "/virtualmachineinstances-validate-create" in health["webhooks"]
    assert health["apiserver"] == {"connectivity": "not configured"}


def test_an_unclean_path_is_redirected_to_the_clean_one_as_gos_mux_does(virt_api: Any) -> None:
    # KubeVirt's own functional tests ask for //healthz and follow Go's mux to /healthz.
    conn = virt_api.connection()
    try:
        conn.request("GET", "//healthz?verbose=1")
        reply = conn.getresponse()
        reply.read()
    finally:
        conn.close()
    assert (reply.status, reply.getheader("Location")) == (301, "/healthz?verbose=1")
    assert virt_api.request("GET", "/a/../healthz")[0] == 301


def test_valid_vmi_is_allowed(virt_api: Any) -> None:
    answer = virt_api.review("/virtualmachineinstances-validate-create", request(VMI_GVR, defaulted_vmi()))
    assert answer["allowed"] is True
    assert "status" not in answer


def test_invalid_vmi_is_refused_with_causes(virt_api: Any) -> None:
    vmi = defaulted_vmi()
    vmi["spec"]["domain"]["devices"]["disks"][0]["disk"]["bus"] = "ide"
    answer = virt_api.review("/virtualmachineinstances-validate-create", request(VMI_GVR, vmi))
    assert answer["allowed"] is False
    status = answer["status"]
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "IDE bus is not supported",
            "field": "spec.domain.devices.disks[0].disk.bus",
        }
    ]
    assert status["message"] == "IDE bus is not supported"


def test_many_causes_are_cut_to_ten(virt_api: Any) -> None:
    vmi = defaulted_vmi()
    disks = vmi["spec"]["domain"]["devices"]["disks"]
    # Each extra disk without a volume is one cause; 12 of them.
    disks.extend({"name": f"ghost{i}", "disk": {"bus": "virtio"}} for i in range(12))
    answer = virt_api.review("/virtualmachineinstances-validate-create", request(VMI_GVR, vmi))
    status = answer["status"]
    assert len(status["details"]["causes"]) == 10
    assert status["message"].endswith(", and 2 more validation errors")


def test_vmi_mutation_returns_a_json_patch(virt_api: Any) -> None:
    vmi = raw_vmi()
    answer = virt_api.review("/virtualmachineinstances-mutate", request(VMI_GVR, vmi))
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(answer["patch"]))
    assert {op["path"] for op in patch} <= {"/metadata", "/spec", "/status"}
    mutated = jsonpatch.apply(vmi, patch)
    assert "foregroundDeleteVirtualMachine" in mutated["metadata"]["finalizers"]
    assert mutated["status"]["phase"] == "Pending"
    assert mutated["spec"]["domain"]["firmware"]["uuid"]


def test_vmi_mutation_refuses_bad_quantities_like_kubevirt(virt_api: Any) -> None:
    vmi = raw_vmi()
    vmi["spec"]["domain"]["resources"] = {"requests": {"memory": "lots"}}
    answer = virt_api.review("/virtualmachineinstances-mutate", request(VMI_GVR, vmi))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"].startswith("quantities must match the regular expression")


def test_vm_with_running_and_run_strategy_is_refused(virt_api: Any) -> None:
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": {
            "running": True,
            "runStrategy": "Always",
            "template": {"spec": copy.deepcopy(defaulted_vmi()["spec"])},
        },
    }
    answer = virt_api.review("/virtualmachines-validate", request(VM_GVR, vm))
    assert answer["allowed"] is False
    causes = answer["status"]["details"]["causes"]
    assert causes[-1]["field"] == "spec.running"
    assert causes[-1]["message"].startswith("Running and RunStrategy are mutually exclusive")


def test_vm_mutation_defaults_machine_type(virt_api: Any) -> None:
    vm = {
        "kind": "VirtualMachine",
        "metadata": {"name": "vm"},
        "spec": {"runStrategy": "Always", "template": {"spec": {"domain": {"devices": {}}}}},
    }
    answer = virt_api.review("/virtualmachines-mutate", request(VM_GVR, vm))
    mutated = jsonpatch.apply(vm, json.loads(base64.b64decode(answer["patch"])))
    assert mutated["spec"]["template"]["spec"]["domain"]["machine"]["type"] == "q35"
    assert mutated["spec"]["template"]["spec"]["architecture"] == "amd64"


def test_migration_mutation_and_validation(virt_api: Any) -> None:
    migration = {
        "kind": "VirtualMachineInstanceMigration",
        "metadata": {"name": "m"},
        "spec": {"vmiName": "tiny"},
    }
    answer = virt_api.review("/migration-mutate-create", request(VMIM_GVR, migration))
    mutated = jsonpatch.apply(migration, json.loads(base64.b64decode(answer["patch"])))
    assert mutated["metadata"]["labels"] == {"kubevirt.io/vmi-name": "tiny"}
    assert mutated["metadata"]["finalizers"] == ["kubevirt.io/migrationJobFinalize"]

    missing = virt_api.review("/migration-validate-create", request(VMIM_GVR, {"spec": {}}))
    assert missing["status"]["code"] == 422
    assert missing["status"]["details"]["causes"][0]["field"] == "spec.vmiName"
    # No Kubernetes API behind this virt-api: the VMI lookup fails with a reason, not a crash.
    lookup = virt_api.review("/migration-validate-create", request(VMIM_GVR, migration))
    assert lookup["allowed"] is False
    assert lookup["status"]["code"] == 400
    assert "no Kubernetes API configured" in lookup["status"]["message"]

    changed = copy.deepcopy(migration)
    changed["spec"]["vmiName"] = "other"
    update = virt_api.review(
        "/migration-validate-update", request(VMIM_GVR, changed, operation="UPDATE", oldObject=migration)
    )
    assert (
        update["status"]["details"]["causes"][0]["message"]
        == "update of Migration object's spec is restricted"
    )


def test_eviction_without_cluster_state_is_let_through(virt_api: Any) -> None:
    # Like KubeVirt, a pod that cannot be looked up is not protected by the webhook (its PDB still is).
    eviction = {"kind": "Eviction", "metadata": {"name": "virt-launcher-x"}}
    pods = {"group": "", "version": "v1", "resource": "pods"}
    answer = virt_api.review(
        "/pod-eviction-validate", request(pods, eviction, name="virt-launcher-x", subResource="eviction")
    )
    assert answer["allowed"] is True


def test_wrong_resource_is_a_bad_request(virt_api: Any) -> None:
    pods = {"group": "", "version": "v1", "resource": "pods"}
    answer = virt_api.review("/virtualmachineinstances-validate-create", request(pods, defaulted_vmi()))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"] == "expect resource to be 'virtualmachineinstances'"


def _status(body: bytes) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(body)
    assert document["kind"] == "Status"
    return document


def test_garbage_json_is_refused(virt_api: Any) -> None:
    status, body = virt_api.request("POST", "/virtualmachineinstances-validate-create", b'{"kind": nope')
    assert status == 400
    assert "not valid JSON" in _status(body)["message"]
    assert virt_api.alive()


def test_wrong_kind_is_refused(virt_api: Any) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {}}).encode()
    status, reply = virt_api.request("POST", "/virtualmachines-validate", body)
    assert status == 400
    assert "expected kind AdmissionReview" in _status(reply)["message"]


def test_wrong_content_type_method_and_path(virt_api: Any) -> None:
    assert virt_api.request("POST", "/virtualmachines-validate", b"{}", content_type="text/plain")[0] == 400
    assert virt_api.request("GET", "/virtualmachines-validate")[0] == 405
    assert virt_api.request("POST", "/no-such-webhook", b"{}")[0] == 404


def test_oversized_body_is_refused_and_server_keeps_serving(virt_api: Any) -> None:
    huge = b'{"pad": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    try:
        status, body = virt_api.request("POST", "/virtualmachineinstances-validate-create", huge)
        assert status == 413
        assert "larger than" in _status(body)["message"]
    except (ConnectionResetError, BrokenPipeError):
        pass  # the server may close the socket while the client is still sending; that is a refusal too
    assert virt_api.alive()


def test_slow_client_is_cut_off_without_blocking_others(virt_api: Any) -> None:
    raw = socket.create_connection(("127.0.0.1", virt_api.port), timeout=10)
    tls = virt_api.context().wrap_socket(raw)
    try:
        tls.sendall(
            b"POST /virtualmachineinstances-validate-create HTTP/1.1\r\nHost: x\r\n"
            b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"kind"'
        )
        # While that body trickles, other requests are answered promptly.
        started = time.monotonic()
        answer = virt_api.review(
            "/virtualmachineinstances-validate-create", request(VMI_GVR, defaulted_vmi())
        )
        assert answer["allowed"] is True
        assert time.monotonic() - started < 1.0
        reply = tls.recv(65536)
        assert reply.startswith(b"HTTP/1.1 408")
    finally:
        tls.close()
    assert virt_api.alive()


def test_trickled_headers_get_the_connection_closed(virt_api: Any) -> None:
    raw = socket.create_connection(("127.0.0.1", virt_api.port), timeout=10)
    tls = virt_api.context().wrap_socket(raw)
    try:
        started = time.monotonic()
        tls.sendall(b"POST /virtualmachineinstances-validate-create HTTP/1.1\r\nHost: x\r\n")
        # Headers never finish: the server closes the connection after the request timeout (1.5 s here).
        assert tls.recv(65536) == b""
        assert time.monotonic() - started < 8
    finally:
        tls.close()
    assert virt_api.alive()


def test_a_stalled_tls_handshake_is_dropped(virt_api: Any) -> None:
    with socket.create_connection(("127.0.0.1", virt_api.port), timeout=10) as raw:
        started = time.monotonic()
        # A TCP connection that never starts TLS: closed after the request timeout (1.5 s here).
        assert raw.recv(1024) == b""
        assert time.monotonic() - started < 8
    assert virt_api.alive()


def test_renewed_certificate_is_served_without_restart(virt_api: Any, write_certificate: Any) -> None:
    before = virt_api.peer_certificate()
    renewed = write_certificate(virt_api.cert_file, virt_api.key_file, "virt-api-2")
    deadline = time.monotonic() + 10
    while virt_api.peer_certificate() != renewed:
        assert time.monotonic() < deadline, "renewed certificate not served"
        time.sleep(0.1)
    assert renewed != before
    assert virt_api.alive()
    assert isinstance(ssl.DER_cert_to_PEM_cert(renewed), str)


# -- input limits ----------------------------------------------------------------------------------


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"x": value}
    return value


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
    deep = raw_vmi()
    deep["spec"]["domain"]["clock"] = {"utc": {}, "x": nested(900)}
    before = full_size_api.log_file.stat().st_size
    answer = full_size_api.review(path, request(VMI_GVR, deep))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"].startswith(
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
    big = raw_vmi()
    big["metadata"]["annotations"] = {"filler": "x" * MAX_OBJECT_BYTES}
    answer = full_size_api.review(VMI_VALIDATE_CREATE, request(VMI_GVR, big))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"] == (
        f"request.object: object is larger than the limit of {MAX_OBJECT_BYTES} bytes"
    )


def test_an_object_just_within_the_size_limit_is_admitted(full_size_api: Any) -> None:
    big = raw_vmi()
    big["metadata"]["annotations"] = {"filler": "x" * (MAX_OBJECT_BYTES - 4096)}
    answer = full_size_api.review(VMI_VALIDATE_CREATE, request(VMI_GVR, big))
    assert "larger than the limit" not in json.dumps(answer)
