"""pause, unpause, soft reboot and the other handler-bound VMI subresources: the checks before the call."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.virt_api.rest.bodies import Options
from kubevirt.virt_api.rest.handler import HandlerCallError, HandlerLocator
from kubevirt.virt_api.rest.status import StatusError
from kubevirt.virt_api.rest.vmi_operations import GuestAgentReadError, VMIOperations
from kubevirt_testing.fake_kube_api import FakeKubeApi

NS, KUBEVIRT_NS = "ns", "kubevirt"


class RecordingTransport:
    def __init__(self, answer: bytes = b"{}", failure: str | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.answer = answer
        self.failure = failure

    def put(self, url: str, body: bytes) -> None:
        self.calls.append(("PUT", url))
        if self.failure:
            raise HandlerCallError(self.failure)

    def get(self, url: str) -> bytes:
        self.calls.append(("GET", url))
        return self.answer


def vmi_object(
    phase: str = "Running", conditions: list[dict[str, str]] | None = None, **spec: Any
) -> dict[str, Any]:
    status = {"phase": phase, "nodeName": "node01", "conditions": conditions or []}
    return {"metadata": {"name": "vmi", "namespace": NS}, "spec": spec, "status": status}


def handler_pod(name: str = "virt-handler-x", node: str = "node01", ip: str = "10.0.0.7") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": KUBEVIRT_NS, "labels": {"kubevirt.io": "virt-handler"}},
        "spec": {"nodeName": node},
        "status": {"podIP": ip},
    }


@pytest.fixture
def api() -> FakeKubeApi:
    fake = FakeKubeApi()
    fake.add(PODS, handler_pod())
    return fake


def operations(
    api: FakeKubeApi, transport: RecordingTransport | None = None
) -> tuple[VMIOperations, RecordingTransport]:
    sink = transport or RecordingTransport()
    return VMIOperations(api, HandlerLocator(api, KUBEVIRT_NS), sink), sink


def refusal(ops: VMIOperations, operation: str, options: Options | None = None) -> StatusError:
    with pytest.raises(StatusError) as caught:
        ops.put(operation, NS, "vmi", options or Options(), b"")
    return caught.value


def vmi_conflict(why: str) -> str:
    return f'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "vmi": {why}'


def test_pause_calls_the_handler_on_the_vmis_node(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    ops, transport = operations(api)
    assert ops.put("pause", NS, "vmi", Options(), b"") == 200
    assert transport.calls == [
        ("PUT", "https://10.0.0.7:8186/v1/namespaces/ns/virtualmachineinstances/vmi/pause")
    ]


def test_ipv6_handler_addresses_are_bracketed(api: FakeKubeApi) -> None:
    api.delete(PODS, KUBEVIRT_NS, "virt-handler-x")
    api.add(PODS, handler_pod(ip="fd00::7"))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    ops, transport = operations(api)
    ops.put("softreboot", NS, "vmi", Options(), b"")
    assert transport.calls[0][1].startswith("https://[fd00::7]:8186/")


@pytest.mark.parametrize(
    ("vmi", "code", "message"),
    [
        (vmi_object(phase="Scheduled"), 409, vmi_conflict("VM is not running")),
        (
            vmi_object(livenessProbe={"tcpSocket": {"port": 22}}),
            403,
            (
                'virtualmachineinstance.kubevirt.io "vmi" is forbidden: '
                "Pausing VMIs with LivenessProbe is currently not supported"
            ),
        ),
        (
            vmi_object(conditions=[{"type": "Paused", "status": "True"}]),
            409,
            vmi_conflict("VMI is already paused"),
        ),
    ],
)
def test_pause_refusals(api: FakeKubeApi, vmi: dict[str, Any], code: int, message: str) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi)
    ops, transport = operations(api)
    err = refusal(ops, "pause")
    assert (err.code, err.message) == (code, message)
    assert transport.calls == []


def test_pause_of_a_missing_vmi_is_404(api: FakeKubeApi) -> None:
    ops, _ = operations(api)
    err = refusal(ops, "pause")
    assert (err.code, err.message) == (404, 'virtualmachineinstance.kubevirt.io "vmi" not found')


def test_dry_run_pause_checks_but_does_not_call(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    ops, transport = operations(api)
    assert ops.put("pause", NS, "vmi", Options(dry_run=["All"]), b"") == 200
    assert transport.calls == []


def test_no_handler_on_the_node_is_400(api: FakeKubeApi) -> None:
    api.delete(PODS, KUBEVIRT_NS, "virt-handler-x")
    api.add(PODS, handler_pod(node="node02"))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    ops, _ = operations(api)
    err = refusal(ops, "pause", Options(dry_run=["All"]))
    assert (err.code, err.reason, err.message) == (400, "BadRequest", "No virt-handler on node node01 found")


@pytest.mark.parametrize(
    ("vmi", "message"),
    [
        (vmi_object(phase="Scheduled"), vmi_conflict("VMI is not running")),
        (vmi_object(), vmi_conflict("VMI is not paused")),
    ],
)
def test_unpause_refusals(api: FakeKubeApi, vmi: dict[str, Any], message: str) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi)
    ops, _ = operations(api)
    assert refusal(ops, "unpause").message == message


def test_unpause_waits_for_a_snapshot(api: FakeKubeApi) -> None:
    api.add(
        VIRTUAL_MACHINES,
        {"metadata": {"name": "vmi", "namespace": NS}, "status": {"snapshotInProgress": "s"}},
    )
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(conditions=[{"type": "Paused", "status": "True"}]))
    ops, _ = operations(api)
    err = refusal(ops, "unpause")
    assert (
        err.message
        == 'Operation cannot be fulfilled on virtualmachine.kubevirt.io "vmi": VM snapshot is in progress'
    )


@pytest.mark.parametrize(
    ("vmi", "message"),
    [
        (vmi_object(phase="Pending"), vmi_conflict("VM is not running")),
        (vmi_object(conditions=[{"type": "Paused", "status": "True"}]), vmi_conflict("VMI is paused")),
        (
            vmi_object(domain={"features": {"acpi": {"enabled": False}}}),
            vmi_conflict("VMI neither have the agent connected nor the ACPI feature enabled"),
        ),
    ],
)
def test_soft_reboot_refusals(api: FakeKubeApi, vmi: dict[str, Any], message: str) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi)
    ops, _ = operations(api)
    assert refusal(ops, "softreboot").message == message


def test_soft_reboot_without_acpi_but_with_an_agent_is_forwarded(api: FakeKubeApi) -> None:
    api.add(
        VIRTUAL_MACHINE_INSTANCES,
        vmi_object(
            conditions=[{"type": "AgentConnected", "status": "True"}],
            domain={"features": {"acpi": {"enabled": False}}},
        ),
    )
    ops, transport = operations(api)
    assert ops.put("softreboot", NS, "vmi", Options(), b"") == 200
    assert transport.calls[0][1].endswith("/softreboot")


def test_freeze_and_unfreeze_word_not_running_differently(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Scheduled"))
    ops, _ = operations(api)
    assert refusal(ops, "freeze").message == vmi_conflict("VM is not running")
    assert refusal(ops, "unfreeze").message == vmi_conflict("VMI is not running")


def test_reset_of_a_vmi_that_is_not_running_names_its_phase(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Pending"))
    ops, _ = operations(api)
    err = refusal(ops, "reset")
    assert err.code == 400
    assert err.message == (
        "Failed to reset non-running VMI with phase Pending: Unable to connect to VirtualMachineInstance "
        "because phase is Pending instead of Running or Scheduled"
    )


def test_a_handler_failure_is_an_internal_error(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    ops, _ = operations(
        api, RecordingTransport(failure="unexpected return code 500 (500 Internal Server Error)")
    )
    err = refusal(ops, "pause")
    assert (err.code, err.message) == (
        500,
        "Internal error occurred: unexpected return code 500 (500 Internal Server Error)",
    )


def test_guest_agent_reads_need_a_connected_agent(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    ops, transport = operations(api, RecordingTransport(answer=b'{"hostname": "guest"}'))
    with pytest.raises(GuestAgentReadError, match="VMI does not have guest agent connected"):
        ops.read_guest_agent("guestosinfo", NS, "vmi")
    api.patch(
        VIRTUAL_MACHINE_INSTANCES,
        NS,
        "vmi",
        [
            {
                "op": "add",
                "path": "/status/conditions/-",
                "value": {"type": "AgentConnected", "status": "True"},
            }
        ],
    )
    assert ops.read_guest_agent("userlist", NS, "vmi") == {"hostname": "guest"}
    assert transport.calls[-1] == (
        "GET",
        "https://10.0.0.7:8186/v1/namespaces/ns/virtualmachineinstances/vmi/userlist",
    )


def test_launcher_state_is_read_from_the_vmis_handler(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Scheduled"))
    answer = b'{"socket": {"state": "Missing", "message": "none yet"}, "domain": null}'
    ops, transport = operations(api, RecordingTransport(answer))
    assert ops.launcher_state(NS, "vmi")["socket"]["state"] == "Missing"
    assert transport.calls == [
        ("GET", f"https://10.0.0.7:8186/v1/namespaces/{NS}/virtualmachineinstances/vmi/launcherstate")
    ]


def test_launcher_state_refusals(api: FakeKubeApi) -> None:
    with pytest.raises(StatusError) as caught:
        operations(api)[0].launcher_state(NS, "vmi")
    assert caught.value.code == 404
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Succeeded"))
    with pytest.raises(StatusError) as caught:
        operations(api)[0].launcher_state(NS, "vmi")
    assert (caught.value.code, caught.value.message) == (
        400,
        "Unable to connect to VirtualMachineInstance because phase is Succeeded instead of Running or "
        "Scheduled",
    )


def test_a_garbled_launcher_state_is_500(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    with pytest.raises(StatusError) as caught:
        operations(api, RecordingTransport(b"not json"))[0].launcher_state(NS, "vmi")
    assert caught.value.code == 500
