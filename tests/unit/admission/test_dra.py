"""GPUs and host devices allocated through DRA (``spec.resourceClaims``), admitted as KubeVirt v1.6.6 does.

The VMI below is shaped like KubeVirt's ``examples/vmi-dra-pgpu.yaml`` (a GPU naming a claim and a request,
the claim in ``spec.resourceClaims``); each case goes through the whole VMI create path (schema check,
defaults, create admitter), with the feature gates off and on.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.admission import defaulting, pipeline
from kubevirt.admission.schema import schema_check
from kubevirt.virt_config import ClusterConfig

GPUS = "spec.spec.domain.devices.gpus"  # KubeVirt's own path for these causes
CLAIMS = "spec.resourceClaims"
INVALID = "FieldValueInvalid"
GATE_MESSAGE = "vmi.spec.domain.devices.gpus contains DRA enabled GPUs but feature gate is not enabled"
CLAIMS_MESSAGE = "vmi.spec.resourceClaims must specify all claims used in vmi.spec.domain.devices.gpus"
GATE_OFF = (INVALID, GPUS, GATE_MESSAGE)
NO_DEVICE_NAME = (INVALID, GPUS, "vmi.spec.domain.devices.gpus contains GPUs without deviceName")
BOTH = (INVALID, GPUS, "vmi.spec.domain.devices.gpus contains GPUs with both deviceName and claimRequest")
CLAIM_MISSING = (INVALID, CLAIMS, CLAIMS_MESSAGE)
HOST_DEVICES_GATE = (
    INVALID,
    "spec.HostDevices",
    "Host Devices feature gate is not enabled in kubevirt-config",
)

DRA_GPU = {"name": "gpu0", "claimName": "gpu-claim", "requestName": "gpu"}
PLUGIN_GPU = {"name": "gpu1", "deviceName": "nvidia.com/GP102GL_Tesla_P40"}

VMI: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachineInstance",
    "metadata": {"name": "dra-gpu", "namespace": "default"},
    "spec": {
        "domain": {
            "devices": {
                "disks": [
                    {"name": "rootdisk", "disk": {"bus": "virtio"}},
                    {"name": "cloudinit", "disk": {"bus": "virtio"}},
                ],
                "gpus": [DRA_GPU],
                "rng": {},
            },
            "memory": {"guest": "1024M"},
            "resources": {},
        },
        "resourceClaims": [{"name": "gpu-claim", "resourceClaimTemplateName": "gpu-claim-template"}],
        "terminationGracePeriodSeconds": 0,
        "volumes": [
            {"name": "rootdisk", "containerDisk": {"image": "registry:5000/kubevirt/test-guest:devel"}},
            {"name": "cloudinit", "cloudInitNoCloud": {"userData": "#cloud-config\n"}},
        ],
    },
}


def _causes(vmi: dict[str, Any], *gates: str) -> list[tuple[str, str, str]]:
    config = ClusterConfig.build(feature_gates=list(gates))
    outcome = pipeline.validate_vmi_create(
        copy.deepcopy(vmi), config, defaulter=defaulting.vmi_defaults, schema=schema_check
    )
    return [(cause.type, cause.field, cause.message) for cause in outcome.causes]


def _with(
    gpus: list[dict[str, Any]] | None = None, claims: list[str] | None = None, **devices: Any
) -> dict[str, Any]:
    vmi = copy.deepcopy(VMI)
    if gpus is not None:
        vmi["spec"]["domain"]["devices"]["gpus"] = gpus
    if claims is not None:
        vmi["spec"]["resourceClaims"] = [{"name": name, "resourceClaimTemplateName": "t"} for name in claims]
    vmi["spec"]["domain"]["devices"].update(devices)
    return vmi


def test_a_dra_gpu_needs_the_gpus_with_dra_gate() -> None:
    assert _causes(VMI) == [GATE_OFF]
    # The host devices' DRA gate does not admit GPUs.
    assert _causes(VMI, "HostDevicesWithDRA") == [GATE_OFF]


def test_a_dra_gpu_whose_claim_is_declared_is_accepted_with_the_gate() -> None:
    assert _causes(VMI, "GPUsWithDRA") == []
    assert _causes(VMI, "GPUsWithDRA", "HostDevicesWithDRA") == []
    # Only the claim is matched: the request name is the ResourceClaim's business.
    assert _causes(_with(gpus=[{"name": "g", "claimName": "gpu-claim"}]), "GPUsWithDRA") == []


@pytest.mark.parametrize("claims", [[], ["other-claim"]], ids=["no resourceClaims", "another claim only"])
def test_the_claim_of_a_dra_gpu_must_be_in_resource_claims(claims: list[str]) -> None:
    vmi = _with(claims=claims)
    assert _causes(vmi, "GPUsWithDRA") == [CLAIM_MISSING]
    # Without the gate only the gate is reported.
    assert _causes(vmi) == [GATE_OFF]


def test_one_missing_claim_among_several_gpus_is_one_cause() -> None:
    gpus = [
        DRA_GPU,
        {"name": "g2", "claimName": "absent", "requestName": "r"},
        {"name": "g3", "claimName": "x"},
    ]
    assert _causes(_with(gpus=gpus), "GPUsWithDRA") == [CLAIM_MISSING]


def test_a_dra_gpu_with_a_request_but_no_claim_name_is_refused() -> None:
    # KubeVirt's webhook fails on this one (it reads the missing claim name); refused here with a cause.
    assert _causes(_with(gpus=[{"name": "g", "requestName": "gpu"}]), "GPUsWithDRA") == [CLAIM_MISSING]
    assert _causes(_with(gpus=[{"name": "g", "requestName": "gpu"}])) == [GATE_OFF]


def test_a_gpu_without_device_name_or_claim_is_refused_and_ends_the_checks() -> None:
    plain = {"name": "g"}
    assert _causes(_with(gpus=[plain]), "GPUsWithDRA") == [NO_DEVICE_NAME]
    # Even before a DRA GPU (with the gate off), only this cause is given.
    assert _causes(_with(gpus=[DRA_GPU, plain])) == [NO_DEVICE_NAME]


def test_a_device_plugin_gpu_needs_no_gate_and_no_claim() -> None:
    assert _causes(_with(gpus=[PLUGIN_GPU], claims=[])) == []


def test_a_gpu_with_a_device_name_and_a_claim_is_refused_each_time() -> None:
    both = {**PLUGIN_GPU, "claimName": "gpu-claim", "requestName": "gpu"}
    assert _causes(_with(gpus=[both]), "GPUsWithDRA") == [BOTH]
    assert _causes(_with(gpus=[both, {**both, "name": "g2"}]), "GPUsWithDRA") == [BOTH, BOTH]
    # The later checks still run, and report after it.
    assert _causes(_with(gpus=[both, DRA_GPU])) == [BOTH, GATE_OFF]
    assert _causes(_with(gpus=[both, DRA_GPU], claims=[]), "GPUsWithDRA") == [BOTH, CLAIM_MISSING]
    assert _causes(_with(gpus=[both, {"name": "g"}])) == [BOTH, NO_DEVICE_NAME]


def test_dra_causes_come_after_the_network_rules_and_before_boot_order() -> None:
    vmi = _with(
        disks=[
            {"name": "rootdisk", "disk": {"bus": "virtio"}, "bootOrder": 1},
            {"name": "cloudinit", "disk": {"bus": "virtio"}, "bootOrder": 1},
        ]
    )
    vmi["spec"]["networks"] = [{"name": "default", "pod": {}}]  # no interface for it
    causes = _causes(vmi)
    fields = [field for _, field, _ in causes]
    assert GATE_OFF in causes
    assert fields.index("spec.networks[0].name") < causes.index(GATE_OFF)
    assert causes.index(GATE_OFF) < fields.index("spec.domain.devices.disks[1].bootOrder")


@pytest.mark.parametrize("gates", [(), ("HostDevicesWithDRA",)], ids=["no gates", "HostDevicesWithDRA"])
def test_a_dra_host_device_needs_the_host_devices_gate(gates: tuple[str, ...]) -> None:
    vmi = _with(gpus=[], hostDevices=[{"name": "nic", "claimName": "gpu-claim", "requestName": "vf"}])
    assert _causes(vmi, *gates) == [HOST_DEVICES_GATE]


def test_a_dra_host_device_is_accepted_with_the_host_devices_gate() -> None:
    # KubeVirt v1.6.6 checks no claim of a host device at admission, with or without HostDevicesWithDRA.
    vmi = _with(gpus=[], hostDevices=[{"name": "nic", "claimName": "undeclared", "requestName": "vf"}])
    assert _causes(vmi, "HostDevices") == []
    assert _causes(vmi, "HostDevices", "HostDevicesWithDRA") == []


def test_a_vm_template_gets_the_same_causes_under_its_own_path() -> None:
    template = copy.deepcopy(VMI)
    template.pop("apiVersion")
    template.pop("kind")
    template["metadata"] = {"labels": {"app": "dra"}}
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "dra-gpu", "namespace": "default"},
        "spec": {"runStrategy": "Halted", "template": template},
    }

    def vm_causes(*gates: str) -> list[tuple[str, str, str]]:
        config = ClusterConfig.build(feature_gates=list(gates))
        outcome = pipeline.validate_vm(vm, config, defaulter=defaulting.vm_defaults, schema=schema_check)
        return [(cause.type, cause.field, cause.message) for cause in outcome.causes]

    assert vm_causes() == [(INVALID, "spec.template.spec.spec.domain.devices.gpus", GATE_MESSAGE)]
    assert vm_causes("GPUsWithDRA") == []
    template["spec"]["resourceClaims"] = []
    assert vm_causes("GPUsWithDRA") == [(INVALID, "spec.template.spec.resourceClaims", CLAIMS_MESSAGE)]
