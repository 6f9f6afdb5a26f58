"""addvolume and removevolume on VMs and VMIs: the gates, KubeVirt's refusals and messages, and the one
patch each request makes (on the VMI, the VM's status or the VM's template); over HTTP too."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, ApiError, InvalidError
from kubevirt.virt_api.rest.handler import HandlerLocator
from kubevirt.virt_api.rest.lifecycle import VMLifecycle
from kubevirt.virt_api.rest.server import SubresourceAPI
from kubevirt.virt_api.rest.status import StatusError
from kubevirt.virt_api.rest.vmi_operations import VMIOperations
from kubevirt.virt_api.rest.volumes import VolumeHotplug
from kubevirt.virt_config import ClusterConfig
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.subresource_api import RecordingTransport

pytestmark = pytest.mark.timeout(60)

JSON = dict[str, Any]
NS = "ns"
HOTPLUG, DECLARATIVE = "HotplugVolumes", "DeclarativeHotplugVolumes"
GATES_OFF = "Enable DeclarativeHotplugVolumes or HotplugVolumes feature gate to use this API."
BASE = f"/apis/subresources.kubevirt.io/v1/namespaces/{NS}"
CLAIM_VOLUME = {"name": "data", "persistentVolumeClaim": {"claimName": "data", "hotpluggable": True}}
DATA_DISK = {"name": "data", "disk": {"bus": "scsi"}, "serial": "data"}


def add_body(name: str = "data", **extra: Any) -> bytes:
    body = {
        "name": name,
        "disk": {"name": "", "disk": {"bus": "scsi"}, "serial": name},
        "volumeSource": {"persistentVolumeClaim": {"claimName": name}},
        **extra,
    }
    return json.dumps(body).encode()


def remove_body(name: str = "data", **extra: Any) -> bytes:
    return json.dumps({"name": name, **extra}).encode()


def vmi_spec(*extra_volumes: JSON) -> JSON:
    disks = [{"name": "root", "disk": {}}] + [{"name": v["name"]} for v in extra_volumes]
    return {
        "domain": {"devices": {"disks": disks}},
        "volumes": [{"name": "root", "containerDisk": {"image": "img"}}, *extra_volumes],
    }


def vm_object(*extra_volumes: JSON, status: JSON | None = None) -> JSON:
    return {
        "metadata": {"name": "vm", "namespace": NS},
        "spec": {"runStrategy": "Always", "template": {"spec": vmi_spec(*extra_volumes)}},
        "status": status if status is not None else {"printableStatus": "Running"},
    }


def vmi_object(*extra_volumes: JSON, phase: str = "Running", owned: bool = False) -> JSON:
    meta: JSON = {"name": "vm", "namespace": NS}
    if owned:
        meta["ownerReferences"] = [
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine",
                "name": "vm",
                "uid": "u",
                "controller": True,
            }
        ]
    return {"metadata": meta, "spec": vmi_spec(*extra_volumes), "status": {"phase": phase}}


def hotplug(api: FakeKubeApi, *gates: str) -> VolumeHotplug:
    return VolumeHotplug(api, lambda: ClusterConfig.build(feature_gates=gates))


def refusal(call: Callable[..., Any], *args: Any, **kwargs: Any) -> StatusError:
    with pytest.raises(StatusError) as caught:
        call(*args, **kwargs)
    return caught.value


def conflict(kind: str, why: str) -> str:
    return f'Operation cannot be fulfilled on {kind}.kubevirt.io "vm": {why}'


@pytest.fixture
def api() -> FakeKubeApi:
    return FakeKubeApi()


# -- gates -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ephemeral", [False, True])
def test_with_both_gates_off_every_request_is_kubevirts_bad_request(
    api: FakeKubeApi, ephemeral: bool
) -> None:
    api.add(VIRTUAL_MACHINES, vm_object())
    for call in (hotplug(api).add, hotplug(api).remove):
        err = refusal(call, NS, "vm", b"not even a body {", ephemeral=ephemeral)
        assert (err.code, err.reason, err.message) == (400, "BadRequest", GATES_OFF)
    assert api.writes == []


# -- VMI (ephemeral) -------------------------------------------------------------------------------


def test_adding_to_a_running_vmi_patches_its_volumes_and_disks(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    assert hotplug(api, HOTPLUG).add(NS, "vm", add_body(), ephemeral=True) == 202
    spec = api.get(VIRTUAL_MACHINE_INSTANCES, NS, "vm")["spec"]
    assert spec["volumes"][-1] == CLAIM_VOLUME
    assert spec["domain"]["devices"]["disks"][-1] == DATA_DISK
    assert api.writes == [("patch", "virtualmachineinstances", NS, "vm")]


def test_removing_a_hotplugged_volume_from_a_vmi(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(CLAIM_VOLUME))
    assert hotplug(api, HOTPLUG).remove(NS, "vm", remove_body(), ephemeral=True) == 202
    assert api.get(VIRTUAL_MACHINE_INSTANCES, NS, "vm")["spec"] == vmi_spec()


def test_a_vmi_owned_by_a_vm_is_refused_without_ephemeral_hotplug(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(owned=True))
    err = refusal(hotplug(api, DECLARATIVE).add, NS, "vm", add_body(), ephemeral=True)
    assert (err.code, err.message) == (400, "VMI ns/vm is owned by a VM")
    # With HotplugVolumes, KubeVirt lets the owned VMI be patched directly.
    assert hotplug(api, HOTPLUG, DECLARATIVE).add(NS, "vm", add_body(), ephemeral=True) == 202


@pytest.mark.parametrize("phase", ["Pending", "Scheduled", "Succeeded"])
def test_a_vmi_that_is_not_running_is_a_conflict(api: FakeKubeApi, phase: str) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase=phase))
    err = refusal(hotplug(api, HOTPLUG).add, NS, "vm", add_body(), ephemeral=True)
    assert (err.code, err.reason, err.message) == (
        409,
        "Conflict",
        conflict("virtualmachineinstance", "VMI is not running"),
    )


def test_a_missing_vmi_is_404(api: FakeKubeApi) -> None:
    err = refusal(hotplug(api, HOTPLUG).remove, NS, "vm", remove_body(), ephemeral=True)
    assert (err.code, err.message) == (404, 'virtualmachineinstance.kubevirt.io "vm" not found')


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (add_body("root"), "Unable to add volume [root] because volume with that name already exists"),
        (remove_body("root"), "Unable to remove volume [root] because it is not hotpluggable"),
        (remove_body("absent"), "Unable to remove volume [absent] because it does not exist"),
    ],
)
def test_requests_that_do_not_fit_the_vmi_are_conflicts(api: FakeKubeApi, body: bytes, why: str) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    call = hotplug(api, HOTPLUG).add if b"disk" in body else hotplug(api, HOTPLUG).remove
    err = refusal(call, NS, "vm", body, ephemeral=True)
    assert (err.code, err.message) == (409, conflict("virtualmachineinstance", why))
    assert api.writes == []


# -- VM with HotplugVolumes: status.volumeRequests -------------------------------------------------


def test_adding_to_a_vm_queues_the_request_in_its_status(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object())
    assert hotplug(api, HOTPLUG, DECLARATIVE).add(NS, "vm", add_body(), ephemeral=False) == 202
    vm = api.get(VIRTUAL_MACHINES, NS, "vm")
    assert vm["status"]["volumeRequests"] == [
        {
            "addVolumeOptions": {
                "name": "data",
                "disk": DATA_DISK,
                "volumeSource": {"persistentVolumeClaim": {"claimName": "data", "hotpluggable": True}},
            }
        }
    ]
    assert vm["spec"]["template"]["spec"] == vmi_spec()  # the VM controller applies it
    assert api.writes == [("patch_status", "virtualmachines", NS, "vm")]


def test_a_second_add_of_the_same_volume_is_a_conflict(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object())
    hotplug(api, HOTPLUG).add(NS, "vm", add_body(), ephemeral=False)
    err = refusal(hotplug(api, HOTPLUG).add, NS, "vm", add_body(), ephemeral=False)
    assert (err.code, err.message) == (
        409,
        conflict("virtualmachine", "add volume request for volume [data] already exists"),
    )


def test_removing_from_a_vm_checks_its_template_then_queues_the_request(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(CLAIM_VOLUME))
    hotplug(api, HOTPLUG).remove(NS, "vm", remove_body(), ephemeral=False)
    assert api.get(VIRTUAL_MACHINES, NS, "vm")["status"]["volumeRequests"] == [
        {"removeVolumeOptions": {"name": "data"}}
    ]
    err = refusal(hotplug(api, HOTPLUG).remove, NS, "vm", remove_body("root"), ephemeral=False)
    assert (err.code, err.message) == (
        409,
        conflict("virtualmachine", "Unable to remove volume [root] because it is not hotpluggable"),
    )


def test_a_missing_vm_is_404(api: FakeKubeApi) -> None:
    err = refusal(hotplug(api, HOTPLUG).add, NS, "vm", add_body(), ephemeral=False)
    assert (err.code, err.message) == (404, 'virtualmachine.kubevirt.io "vm" not found')


def test_a_dry_run_is_checked_but_changes_nothing(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object())
    before = api.get(VIRTUAL_MACHINES, NS, "vm")
    assert hotplug(api, HOTPLUG).add(NS, "vm", add_body(dryRun=["All"]), ephemeral=False) == 202
    assert api.get(VIRTUAL_MACHINES, NS, "vm") == before
    assert api.writes == []


# -- VM with DeclarativeHotplugVolumes only: the template ------------------------------------------


def test_declarative_hotplug_patches_the_vm_template(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object())
    assert hotplug(api, DECLARATIVE).add(NS, "vm", add_body(), ephemeral=False) == 202
    vm = api.get(VIRTUAL_MACHINES, NS, "vm")
    assert vm["spec"]["template"]["spec"] == vmi_spec(CLAIM_VOLUME) | {
        "domain": {"devices": {"disks": [{"name": "root", "disk": {}}, DATA_DISK]}}
    }
    assert "volumeRequests" not in vm["status"]
    assert hotplug(api, DECLARATIVE).remove(NS, "vm", remove_body(), ephemeral=False) == 202
    assert api.get(VIRTUAL_MACHINES, NS, "vm")["spec"]["template"]["spec"] == vmi_spec()


# -- concurrent changes and failures ---------------------------------------------------------------


class RacingApi(FakeKubeApi):
    """Someone else adds a volume between virt-api's read of the VMI and its patch."""

    def patch(self, resource: Any, namespace: str | None, name: str, patch: Any, **kwargs: Any) -> JSON:
        vmi = self.get(resource, namespace, name)
        vmi["spec"]["volumes"].append({"name": "other", "emptyDisk": {"capacity": "1Gi"}})
        self.update(resource, namespace, vmi)
        return super().patch(resource, namespace, name, patch, **kwargs)


def test_a_concurrent_change_fails_the_patch_instead_of_being_overwritten() -> None:
    api = RacingApi()
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    err = refusal(hotplug(api, HOTPLUG).add, NS, "vm", add_body(), ephemeral=True)
    assert (err.code, err.reason) == (422, "Invalid")  # the API server's answer, which virtctl retries
    volumes = api.get(VIRTUAL_MACHINE_INSTANCES, NS, "vm")["spec"]["volumes"]
    assert [volume["name"] for volume in volumes] == ["root", "other"]


def test_the_api_servers_invalid_is_passed_on_and_other_failures_are_500(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object())
    real_patch = api.patch

    def failing(error: ApiError) -> Callable[..., JSON]:
        def patch(*_args: Any, **_kwargs: Any) -> JSON:
            raise error

        return patch

    message = "the server rejected our request due to an error in our request"
    api.patch = failing(InvalidError(422, "Invalid", message))  # type: ignore[method-assign]
    err = refusal(hotplug(api, HOTPLUG).add, NS, "vm", add_body(), ephemeral=False)
    assert (err.code, err.reason, err.message) == (422, "Invalid", message)
    api.patch = failing(ApiError(500, "InternalError", "etcd is gone"))  # type: ignore[method-assign]
    err = refusal(hotplug(api, HOTPLUG).add, NS, "vm", add_body(), ephemeral=False)
    assert (err.code, err.message) == (
        500,
        "Internal error occurred: unable to patch vm status: etcd is gone",
    )
    err = refusal(hotplug(api, DECLARATIVE).add, NS, "vm", add_body(), ephemeral=False)
    assert err.message == "Internal error occurred: unable to patch vm: etcd is gone"
    api.patch = real_patch  # type: ignore[method-assign]


# -- over HTTP -------------------------------------------------------------------------------------


def _application(api: FakeKubeApi, *gates: str) -> web.Application:
    config = lambda: ClusterConfig.build(feature_gates=gates)  # noqa: E731
    vmis = VMIOperations(api, HandlerLocator(api, "kubevirt"), RecordingTransport())
    app = web.Application()
    SubresourceAPI(VMLifecycle(api), vmis, config).install(app)
    return app


def _serve(app: web.Application, scenario: Callable[[TestClient[Any, Any]], Awaitable[None]]) -> None:
    async def main() -> None:
        async with TestClient(TestServer(app)) as client:
            await scenario(client)

    asyncio.run(main())


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("virtualmachines/vm/addvolume", add_body()),
        ("virtualmachines/vm/removevolume", remove_body("gone")),
        ("virtualmachineinstances/vm/addvolume", add_body()),
        ("virtualmachineinstances/vm/removevolume", remove_body("gone")),
    ],
)
def test_the_four_routes(api: FakeKubeApi, path: str, body: bytes) -> None:
    api.add(
        VIRTUAL_MACHINES, vm_object({"name": "gone", "dataVolume": {"name": "gone", "hotpluggable": True}})
    )
    api.add(
        VIRTUAL_MACHINE_INSTANCES,
        vmi_object({"name": "gone", "dataVolume": {"name": "gone", "hotpluggable": True}}),
    )
    answers: list[tuple[int, Any]] = []

    async def scenario(client: TestClient[Any, Any]) -> None:
        response = await client.put(f"{BASE}/{path}", data=body)
        answers.append((response.status, await response.read()))

    _serve(_application(api, HOTPLUG), scenario)
    assert answers == [(202, b"")]
    _serve(_application(api), scenario)
    code, raw = answers[-1]
    status = json.loads(raw)
    assert (code, status["kind"], status["reason"], status["message"]) == (
        400,
        "Status",
        "BadRequest",
        GATES_OFF,
    )


def test_a_refusal_over_http_is_a_status(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Scheduled"))
    answers: list[tuple[int, JSON]] = []

    async def scenario(client: TestClient[Any, Any]) -> None:
        response = await client.put(f"{BASE}/virtualmachineinstances/vm/addvolume", data=add_body())
        answers.append((response.status, await response.json()))

    _serve(_application(api, HOTPLUG), scenario)
    [(code, status)] = answers
    assert code == 409
    assert status["message"] == conflict("virtualmachineinstance", "VMI is not running")
    assert status["details"] == {"name": "vm", "group": "kubevirt.io", "kind": "virtualmachineinstance"}
