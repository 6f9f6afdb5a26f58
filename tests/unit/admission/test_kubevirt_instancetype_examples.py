"""KubeVirt v1.6's own instance type examples (``examples/vm-cirros-c*``, ``vm-windows-clarge-windows``
with ``csmall``, ``clarge``, ``cluster-csmall``, ``virtio`` and ``windows``), rebuilt here from what
they declare: KubeVirt's admission answer for each, and the domain of each once the conflicting
template memory is removed.

KubeVirt's examples keep the template's ``memory.guest: 128Mi`` and ``resources: {}`` beside the
instance type, so its VM webhook refuses every one of them for the memory alone.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from lxml import etree

from kubevirt.virtctl.root import root

GROUP = "instancetype.kubevirt.io/v1beta1"
CIRROS = "registry:5000/kubevirt/cirros-container-disk-demo:devel"
MEMORY_CONFLICT = {
    "type": "FieldValueInvalid",
    "message": "VM field(s) spec.template.spec.domain.memory conflicts with selected instance type",
    "field": "spec.template.spec.domain.memory",
}


def _sized(kind: str, name: str, cpus: int, memory: str) -> dict[str, Any]:
    spec = {"cpu": {"guest": cpus}, "memory": {"guest": memory}}
    return {"apiVersion": GROUP, "kind": kind, "metadata": {"name": name}, "spec": spec}


WINDOWS_PREFERENCE = {
    "clock": {
        "preferredClockOffset": {"utc": {}},
        "preferredTimer": {
            "hpet": {"present": False},
            "hyperv": {},
            "pit": {"tickPolicy": "delay"},
            "rtc": {"tickPolicy": "catchup"},
        },
    },
    "cpu": {"preferredCPUTopology": "sockets"},
    "devices": {"preferredDiskBus": "sata", "preferredInterfaceModel": "e1000", "preferredTPM": {}},
    "features": {
        "preferredAcpi": {},
        "preferredApic": {},
        "preferredHyperv": {"relaxed": {}, "spinlocks": {"spinlocks": 8191}, "vapic": {}},
        "preferredSmm": {},
    },
    "firmware": {"preferredEfi": {"secureBoot": True}},
}
OBJECTS = [
    _sized("VirtualMachineInstancetype", "csmall", 1, "128Mi"),
    _sized("VirtualMachineInstancetype", "clarge", 4, "2Gi"),
    _sized("VirtualMachineClusterInstancetype", "cluster-csmall", 1, "128Mi"),
    {
        "apiVersion": GROUP,
        "kind": "VirtualMachinePreference",
        "metadata": {"name": "virtio"},
        "spec": {"devices": {"preferredDiskBus": "virtio", "preferredInterfaceModel": "virtio"}},
    },
    {
        "apiVersion": GROUP,
        "kind": "VirtualMachinePreference",
        "metadata": {"name": "windows"},
        "spec": WINDOWS_PREFERENCE,
    },
]


def _cirros_volumes(cloud_init_bus: str | None) -> tuple[list[Any], list[Any]]:
    cloud_disk: dict[str, Any] = {"bus": cloud_init_bus} if cloud_init_bus else {}
    disks = [{"disk": {}, "name": "containerdisk"}, {"disk": cloud_disk, "name": "cloudinitdisk"}]
    user_data = "#!/bin/sh\n\necho 'printed from cloud-init userdata'\n"
    volumes = [
        {"containerDisk": {"image": CIRROS}, "name": "containerdisk"},
        {"cloudInitNoCloud": {"userData": user_data}, "name": "cloudinitdisk"},
    ]
    return disks, volumes


def _vm(
    name: str, instancetype: tuple[str, str], preference: str | None, *, windows_pvc: bool = False
) -> dict[str, Any]:
    if windows_pvc:
        disks: list[Any] = [{"disk": {}, "name": "pvcdisk"}]
        volumes: list[Any] = [{"name": "pvcdisk", "persistentVolumeClaim": {"claimName": "disk-windows"}}]
    else:
        # KubeVirt's examples without a preference put the cloud-init disk on virtio.
        disks, volumes = _cirros_volumes("virtio" if preference is None else None)
    domain: dict[str, Any] = {"devices": {"disks": disks}, "memory": {"guest": "128Mi"}, "resources": {}}
    if windows_pvc:
        domain["firmware"] = {"uuid": "5d307ca9-b3ef-428c-8861-06e72d69f223"}
    spec: dict[str, Any] = {
        "instancetype": {"kind": instancetype[0], "name": instancetype[1]},
        "runStrategy": "Halted",
        "template": {
            "metadata": {"labels": {"kubevirt.io/vm": name}},
            "spec": {"domain": domain, "terminationGracePeriodSeconds": 0, "volumes": volumes},
        },
    }
    if preference is not None:
        spec["preference"] = {"kind": "VirtualMachinePreference", "name": preference}
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"labels": {"kubevirt.io/vm": name}, "name": name},
        "spec": spec,
    }


NAMESPACED, CLUSTER = "VirtualMachineInstancetype", "VirtualMachineClusterInstancetype"
VMS = {
    "vm-cirros-csmall": _vm("vm-cirros-csmall", (NAMESPACED, "csmall"), None),
    "vm-cirros-cluster-csmall": _vm("vm-cirros-cluster-csmall", (CLUSTER, "cluster-csmall"), None),
    "vm-cirros-clarge": _vm("vm-cirros-clarge", (NAMESPACED, "clarge"), None),
    "vm-cirros-clarge-virtio": _vm("vm-cirros-clarge-virtio", (NAMESPACED, "clarge"), "virtio"),
    "vm-cirros-clarge-windows": _vm("vm-cirros-clarge-windows", (NAMESPACED, "clarge"), "windows"),
    "vm-windows-clarge-windows": _vm(
        "vm-windows-clarge-windows", (NAMESPACED, "clarge"), "windows", windows_pvc=True
    ),
}


@pytest.fixture(scope="module")
def objects_args(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    path = tmp_path_factory.mktemp("objects") / "objects.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": OBJECTS}))
    return ["--objects", str(path)]


def _run(command: str, vm: dict[str, Any], objects_args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(root, [command, "-f", "-", *objects_args], input=json.dumps(vm))
    return result.exit_code, result.stdout


@pytest.mark.parametrize("name", sorted(VMS))
def test_kubevirt_refuses_its_examples_for_the_template_memory(name: str, objects_args: list[str]) -> None:
    code, out = _run("validate", VMS[name], objects_args)
    assert (code, json.loads(out)) == (1, [MEMORY_CONFLICT])


def _without_memory(name: str) -> dict[str, Any]:
    vm = json.loads(json.dumps(VMS[name]))
    domain = vm["spec"]["template"]["spec"]["domain"]
    del domain["memory"], domain["resources"]
    return vm


def _domain(name: str, objects_args: list[str]) -> Any:
    vm = _without_memory(name)
    code, out = _run("validate", vm, objects_args)
    assert (code, json.loads(out)) == (0, [])
    code, out = _run("render", vm, objects_args)
    assert code == 0
    return etree.fromstring(out.encode())


# name: (guest memory bytes, sockets, enabled vCPUs, disk buses, interface model, EFI secure boot)
EXPECTED = {
    "vm-cirros-csmall": (134217728, 4, 1, ["sata", "virtio"], "virtio-non-transitional", False),
    "vm-cirros-cluster-csmall": (134217728, 4, 1, ["sata", "virtio"], "virtio-non-transitional", False),
    "vm-cirros-clarge": (2147483648, 16, 4, ["sata", "virtio"], "virtio-non-transitional", False),
    "vm-cirros-clarge-virtio": (2147483648, 16, 4, ["virtio", "virtio"], "virtio-non-transitional", False),
    "vm-cirros-clarge-windows": (2147483648, 16, 4, ["sata", "sata"], "e1000", True),
    "vm-windows-clarge-windows": (2147483648, 16, 4, ["sata"], "e1000", True),
}


@pytest.mark.parametrize("name", sorted(VMS))
def test_without_the_memory_they_render_their_instancetype_and_preference(
    name: str, objects_args: list[str]
) -> None:
    memory, sockets, enabled, buses, model, secure = EXPECTED[name]
    domain = _domain(name, objects_args)
    assert int(domain.findtext("memory")) == memory
    topology = domain.find("cpu/topology")
    assert (int(topology.get("sockets")), topology.get("cores"), topology.get("threads")) == (
        sockets,
        "1",
        "1",
    )
    assert len(domain.findall("vcpus/vcpu[@enabled='yes']")) == enabled
    assert [target.get("bus") for target in domain.findall("devices/disk/target")] == buses
    assert domain.find("devices/interface/model").get("type") == model
    loader = domain.find("os/loader")
    assert (loader is not None and loader.get("secure") == "yes") == secure
    windows = name.endswith("-windows")
    assert (domain.find("devices/tpm") is not None) == windows
    assert (domain.find("features/hyperv/spinlocks") is not None) == windows
    assert (domain.find("features/smm") is not None) == windows
    if windows:
        timers = {timer.get("name"): timer.attrib for timer in domain.findall("clock/timer")}
        assert timers["hpet"]["present"] == "no"
        assert timers["rtc"]["tickpolicy"] == "catchup"
        assert timers["pit"]["tickpolicy"] == "delay"
        assert domain.find("clock").get("offset") == "utc"


def test_the_firmware_uuid_of_the_windows_example_reaches_the_domain(objects_args: list[str]) -> None:
    domain = _domain("vm-windows-clarge-windows", objects_args)
    entries = {entry.get("name"): entry.text for entry in domain.findall("sysinfo/system/entry")}
    assert entries["uuid"] == "5d307ca9-b3ef-428c-8861-06e72d69f223"
