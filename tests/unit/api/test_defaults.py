"""The API-level defaults against what KubeVirt's webhook output (``.defaults.json``) contains."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from kubevirt_api.core.v1 import (
    VirtualMachine,
    VirtualMachineInstance,
    VirtualMachineInstanceReplicaSet,
)
from kubevirt_api.core.v1.defaults import (
    default_bridge_network_interface,
    default_masquerade_network_interface,
    default_pod_network,
    set_object_defaults_virtual_machine,
    set_object_defaults_virtual_machine_instance,
    set_object_defaults_virtual_machine_instance_replica_set,
)

VALID = Path(__file__).parents[2] / "testdata" / "conformance" / "vmi" / "valid"
INPUTS = sorted(p for p in VALID.glob("*.json") if p.name.count(".") == 1)
DEFAULTED = sorted(VALID.glob("*.defaults*.json"))
LEGACY_UUID_NAMESPACE = uuid.UUID("6a1a24a1-4061-4607-8bf4-a3963d0c5895")


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def no_uuid() -> str:
    raise AssertionError("a firmware UUID was generated although one is set")


def contained(mine: Any, theirs: Any) -> bool:
    """``mine`` is ``theirs`` or a part of it (later webhook steps may add to what the API set)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        return all(k in theirs and contained(v, theirs[k]) for k, v in mine.items())
    if isinstance(mine, list) and isinstance(theirs, list):
        return len(mine) <= len(theirs) and all(contained(a, b) for a, b in zip(mine, theirs, strict=False))
    return bool(mine == theirs)


def changes(before: Any, after: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[tuple[str, Any]] = []
        for key, value in after.items():
            if key not in before:
                out.append((f"{path}.{key}", value))
            else:
                out += changes(before[key], value, f"{path}.{key}")
        return out
    if isinstance(before, list) and isinstance(after, list):
        return [
            c
            for i, (a, b) in enumerate(zip(before, after, strict=True))
            for c in changes(a, b, f"{path}[{i}]")
        ]
    return [] if before == after else [(path, after)]


def lookup(obj: Any, path: str) -> Any:
    for part in path.replace("[", ".[").split(".")[1:]:
        obj = obj[int(part[1:-1])] if part.startswith("[") else obj.get(part)
        if obj is None:
            return None
    return obj


@pytest.mark.parametrize("path", DEFAULTED, ids=lambda p: p.name)
def test_defaults_are_already_applied_in_webhook_output(path: Path) -> None:
    data = load(path)
    vmi = VirtualMachineInstance.from_dict(data)
    before = vmi.to_dict()
    set_object_defaults_virtual_machine_instance(vmi, new_uuid=no_uuid)
    assert vmi.to_dict() == before


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.stem)
def test_every_default_set_is_what_kubevirt_set(path: Path) -> None:
    data = load(path)
    data["spec"]["domain"].setdefault("firmware", {}).setdefault(
        "uuid", str(uuid.uuid5(LEGACY_UUID_NAMESPACE, data["metadata"]["name"]))
    )
    vmi = VirtualMachineInstance.from_dict(data)
    before = vmi.to_dict()
    set_object_defaults_virtual_machine_instance(vmi, new_uuid=no_uuid)
    expected = load(path.with_name(path.stem + ".defaults.json"))
    for where, value in changes(before, vmi.to_dict()):
        assert contained(value, lookup(expected, where)), where


def test_vmi_gets_firmware_features_acpi_and_a_uuid() -> None:
    vmi = VirtualMachineInstance.from_dict({"spec": {"domain": {"devices": {}}}})
    set_object_defaults_virtual_machine_instance(vmi, new_uuid=lambda: "1234")
    assert vmi.to_dict()["spec"]["domain"] == {
        "devices": {},
        "firmware": {"uuid": "1234"},
        "features": {"acpi": {"enabled": True}},
    }


def test_device_and_feature_defaults() -> None:
    spec = {
        "domain": {
            "firmware": {"uuid": "u"},
            "clock": {"timer": {"hpet": {"tickPolicy": "delay"}, "rtc": {"present": False}, "kvm": {}}},
            "features": {
                "acpi": {"enabled": False},
                "apic": {},
                "smm": {},
                "hyperv": {
                    "relaxed": {},
                    "spinlocks": {},
                    "synictimer": {"direct": {}},
                    "vendorid": {"vendorid": "kv"},
                    "evmcs": {"enabled": False},
                },
            },
            "devices": {
                "disks": [
                    {"name": "a"},
                    {"name": "b", "cdrom": {}},
                    {"name": "c", "cdrom": {"readonly": False, "tray": "open"}},
                    {"name": "d", "lun": {}, "blockSize": {"matchVolume": {}}},
                ],
                "inputs": [{"name": "t", "type": ""}, {"name": "k", "type": "keyboard", "bus": "virtio"}],
                "gpus": [{"name": "g", "deviceName": "x", "virtualGPUOptions": {"display": {"ramFB": {}}}}],
            },
        },
        "readinessProbe": {"periodSeconds": 5},
        "livenessProbe": {"timeoutSeconds": 0, "failureThreshold": 7},
    }
    vmi = VirtualMachineInstance.from_dict({"spec": spec})
    set_object_defaults_virtual_machine_instance(vmi, new_uuid=no_uuid)
    out = vmi.to_dict()["spec"]
    domain = out["domain"]
    assert domain["clock"]["timer"] == {
        "hpet": {"tickPolicy": "delay", "present": True},
        "rtc": {"present": False},
        "kvm": {"present": True},
    }
    features = domain["features"]
    assert features["acpi"] == {"enabled": False}
    assert features["apic"] == {"enabled": True}
    assert features["smm"] == {"enabled": True}
    assert features["hyperv"] == {
        "relaxed": {"enabled": True},
        "spinlocks": {"enabled": True, "spinlocks": 4096},
        "synictimer": {"enabled": True, "direct": {"enabled": True}},
        "vendorid": {"enabled": True, "vendorid": "kv"},
        "evmcs": {"enabled": False},
    }
    assert domain["devices"]["disks"] == [
        {"name": "a", "disk": {}},
        {"name": "b", "cdrom": {"readonly": True, "tray": "closed"}},
        {"name": "c", "cdrom": {"readonly": False, "tray": "open"}},
        {"name": "d", "lun": {}, "blockSize": {"matchVolume": {"enabled": True}}},
    ]
    assert domain["devices"]["inputs"] == [
        {"name": "t", "type": "tablet", "bus": "usb"},
        {"name": "k", "type": "keyboard", "bus": "virtio"},
    ]
    assert domain["devices"]["gpus"][0]["virtualGPUOptions"]["display"]["ramFB"] == {"enabled": True}
    probe_defaults = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert out["readinessProbe"] == {**probe_defaults, "periodSeconds": 5}
    assert out["livenessProbe"] == {**probe_defaults, "failureThreshold": 7}


def test_disabled_spinlocks_get_no_retries() -> None:
    vmi = VirtualMachineInstance.from_dict(
        {"spec": {"domain": {"devices": {}, "features": {"hyperv": {"spinlocks": {"enabled": False}}}}}}
    )
    set_object_defaults_virtual_machine_instance(vmi, new_uuid=lambda: "u")
    assert vmi.to_dict()["spec"]["domain"]["features"]["hyperv"]["spinlocks"] == {"enabled": False}


def test_vm_template_defaults_do_not_add_firmware_or_features() -> None:
    vm = VirtualMachine.from_dict(
        {
            "spec": {
                "template": {"spec": {"domain": {"devices": {"disks": [{"name": "a", "cdrom": {}}]}}}},
            },
            "status": {
                "volumeRequests": [
                    {
                        "addVolumeOptions": {
                            "name": "hp",
                            "disk": {"name": "hp"},
                            "volumeSource": {"dataVolume": {"name": "dv"}},
                        }
                    }
                ]
            },
        }
    )
    set_object_defaults_virtual_machine(vm, new_uuid=no_uuid)
    out = vm.to_dict()
    assert out["spec"]["template"]["spec"]["domain"] == {
        "devices": {"disks": [{"name": "a", "cdrom": {"readonly": True, "tray": "closed"}}]}
    }
    assert out["status"]["volumeRequests"][0]["addVolumeOptions"]["disk"] == {"name": "hp", "disk": {}}


def test_vm_and_replica_set_templates_get_firmware_uuid_and_acpi() -> None:
    template = {"spec": {"domain": {"devices": {}, "firmware": {}, "features": {}}}}
    vm = VirtualMachine.from_dict({"spec": {"template": template}})
    set_object_defaults_virtual_machine(vm, new_uuid=lambda: "vm-uuid")
    assert vm.to_dict()["spec"]["template"]["spec"]["domain"] == {
        "devices": {},
        "firmware": {"uuid": "vm-uuid"},
        "features": {"acpi": {"enabled": True}},
    }
    rs = VirtualMachineInstanceReplicaSet.from_dict({"spec": {"selector": {}, "template": template}})
    set_object_defaults_virtual_machine_instance_replica_set(rs, new_uuid=lambda: "rs-uuid")
    assert rs.to_dict()["spec"]["template"]["spec"]["domain"]["firmware"] == {"uuid": "rs-uuid"}


def test_random_firmware_uuid_is_a_uuid() -> None:
    vmi = VirtualMachineInstance.from_dict({"spec": {"domain": {"devices": {}}}})
    set_object_defaults_virtual_machine_instance(vmi)
    assert vmi.spec.domain.firmware is not None
    assert uuid.UUID(str(vmi.spec.domain.firmware.uuid)).version == 4


def test_default_pod_network_and_interfaces() -> None:
    assert default_pod_network().to_dict() == {"name": "default", "pod": {}}
    assert default_bridge_network_interface().to_dict() == {"name": "default", "bridge": {}}
    assert default_masquerade_network_interface().to_dict() == {"name": "default", "masquerade": {}}
