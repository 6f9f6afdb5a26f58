"""Exporting a VirtualMachine: every claim of its volumes served once the VM is stopped, the VM's
manifests put in a ConfigMap the exporter pod mounts, and the VM named in the status."""

from __future__ import annotations

import json
from typing import Any

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.client.resources import CONFIG_MAPS, VIRTUAL_MACHINE_EXPORTS
from kubevirt.controller import key_for
from kubevirt_api.core.v1 import VirtualMachineInstance

from .world import CA_BUNDLE, CLAIM, EXPORT, NS, VM, World, claim, export, running_vmi, vm

MANIFEST_CM = f"exporter-vm-manifest-{EXPORT}"


def vm_export(world: World, *, volumes: list[dict[str, Any]] | None = None) -> None:
    world.add(VIRTUAL_MACHINES, vm(volumes=volumes))
    world.add(VIRTUAL_MACHINE_EXPORTS, export("VirtualMachine", VM))


def test_a_running_vm_makes_the_export_wait() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINE_INSTANCES, running_vmi())
    vm_export(world)
    assert world.run() is None
    assert world.pod() is None
    ready = world.conditions()["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "InUse",
        f"Virtual Machine {NS}/{VM} is running",
    )
    status = world.status()
    assert (status["phase"], status["virtualMachineName"]) == ("Pending", VM)


def test_a_stopped_vms_claims_are_served_with_its_manifests() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINE_INSTANCES, running_vmi(phase="Succeeded"))  # a finished VMI runs nothing
    vm_export(world)
    world.run()
    pod = world.pod()
    assert pod is not None
    assert world.env()["VOLUME0_EXPORT_PATH"] == f"/export-volumes/{CLAIM}"
    assert {"name": "manifest-data", "mountPath": "/manifest_data"} in pod["spec"]["containers"][0][
        "volumeMounts"
    ]
    assert {"name": "manifest-data", "configMap": {"name": MANIFEST_CM}} in pod["spec"]["volumes"]
    assert "DataManifestCreated" in world.events.reasons()

    world.set_pod_phase("Running")
    world.run()
    status = world.status()
    assert (status["phase"], status["virtualMachineName"]) == ("Ready", VM)
    assert [v["name"] for v in status["links"]["internal"]["volumes"]] == [CLAIM]


def test_the_manifest_config_map_holds_the_vm_its_data_volumes_and_hosts() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(PERSISTENT_VOLUME_CLAIMS, claim("dv-disk"))
    templates = [
        {
            "metadata": {"name": "dv-disk"},
            "spec": {"sourceRef": {"kind": "DataSource", "name": "fedora"}, "storage": {}},
        },
        {"metadata": {"name": "unused"}, "spec": {"source": {"blank": {}}}},
    ]
    volumes = [
        {"name": "root", "persistentVolumeClaim": {"claimName": CLAIM}},
        {"name": "data", "dataVolume": {"name": "dv-disk"}},
        {"name": "cloudinit", "cloudInitNoCloud": {"userData": "#cloud-config"}},
    ]
    source_vm = vm(volumes=volumes, templates=templates)
    source_vm["metadata"]["annotations"] = {"note": "kept"}
    world.add(VIRTUAL_MACHINES, source_vm)
    world.add(VIRTUAL_MACHINE_EXPORTS, export("VirtualMachine", VM))
    world.run()

    config_map = world.get(CONFIG_MAPS, MANIFEST_CM)
    [owner] = config_map["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("VirtualMachineExport", EXPORT)
    data = config_map["data"]
    assert data["internal_host"] == f"virt-export-{EXPORT}.{NS}.svc"
    assert json.loads(data["internal_ca_cm"]) == {
        "metadata": {"name": f"export-ca-cm-{EXPORT}", "creationTimestamp": None},
        "data": {"ca.pem": CA_BUNDLE},
    }
    assert "external_host" not in data
    assert data["export-name"] == EXPORT

    exported = json.loads(data["virtualmachine-manifest"])
    assert exported["metadata"] == {
        "name": VM,
        "namespace": NS,
        "creationTimestamp": None,
        "labels": {"team": "a"},
        "annotations": {"note": "kept"},
    }
    assert exported["status"] == {}
    by_name = {t["metadata"]["name"]: t for t in exported["spec"]["dataVolumeTemplates"]}
    # The template of a volume imports from HTTP (the importer fills in the URL); others stay as they are.
    assert by_name["dv-disk"]["spec"]["source"] == {"http": {"url": ""}}
    assert "sourceRef" not in by_name["dv-disk"]["spec"]
    assert by_name["unused"]["spec"]["source"] == {"blank": {}}

    # A claim no template makes becomes a DataVolume shaped as the claim.
    assert set(data) >= {f"dv-{CLAIM}"}
    assert "dv-dv-disk" not in data
    assert json.loads(data[f"dv-{CLAIM}"]) == {
        "metadata": {"name": CLAIM, "namespace": NS, "creationTimestamp": None},
        "spec": {
            "source": {"http": {"url": ""}},
            "storage": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "volumeMode": "Filesystem",
            },
        },
        "status": {},
    }


def test_a_vm_without_claims_is_skipped() -> None:
    world = World()
    vm_export(world, volumes=[{"name": "disk", "containerDisk": {"image": "cirros"}}])
    assert world.run() is None
    ready = world.conditions()["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "VMNoVolumes")
    assert world.status()["phase"] == "Skipped"
    assert world.pod() is None


def test_a_missing_vm_is_skipped_and_looked_at_again() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_EXPORTS, export("VirtualMachine", "gone"))
    assert world.run() == 3.0
    assert world.status()["phase"] == "Skipped"
    assert world.status()["virtualMachineName"] == "gone"


def test_a_data_volume_whose_claim_does_not_exist_yet_makes_the_export_wait() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    volumes = [
        {"name": "root", "persistentVolumeClaim": {"claimName": CLAIM}},
        {"name": "data", "dataVolume": {"name": "importing"}},
    ]
    vm_export(world, volumes=volumes)
    assert world.run() == 3.0
    assert world.pod() is None
    assert (
        world.conditions()["Ready"]["message"]
        == f"Not all volumes in the Virtual Machine {NS}/{VM} are populated"
    )


def test_a_persistent_tpm_exports_the_backend_storage_claim() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    backend = claim("persistent-state-for-vm-abcde", content_type=None)
    backend["metadata"]["labels"] = {"persistent-state-for": VM}
    world.add(PERSISTENT_VOLUME_CLAIMS, backend)
    source = vm()
    source["spec"]["template"]["spec"]["domain"]["devices"]["tpm"] = {"persistent": True}
    world.add(VIRTUAL_MACHINES, source)
    world.add(VIRTUAL_MACHINE_EXPORTS, export("VirtualMachine", VM))
    world.run()
    paths = sorted(v for k, v in world.env().items() if k.endswith("_EXPORT_PATH"))
    assert paths == [f"/export-volumes/{CLAIM}", "/export-volumes/persistent-state-for-vm-abcde"]


def test_vm_and_vmi_events_enqueue_the_vms_exports() -> None:
    world = World()
    world.add(VIRTUAL_MACHINES, vm())
    world.add(VIRTUAL_MACHINE_EXPORTS, export("VirtualMachine", VM))
    world.add(VIRTUAL_MACHINE_EXPORTS, export(name="other"))
    world.sync()
    [source] = world.vms.list()
    world.controller.on_vm_update(source, source)
    assert world.queued == [key_for(NS, EXPORT)]

    world.queued.clear()
    vmi = running_vmi()
    vmi["metadata"]["ownerReferences"] = [
        {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": VM, "uid": "u", "controller": True}
    ]
    world.controller.on_vmi_add(VirtualMachineInstance.from_dict(vmi))
    assert world.queued == [key_for(NS, EXPORT)]


def test_a_vmi_of_its_own_enqueues_the_exports_of_its_claims() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINE_EXPORTS, export())
    world.sync()
    vmi = running_vmi("standalone")
    vmi["spec"]["volumes"] = [{"name": "root", "persistentVolumeClaim": {"claimName": CLAIM}}]
    world.controller.on_vmi_update(
        VirtualMachineInstance.from_dict(vmi), VirtualMachineInstance.from_dict(vmi)
    )
    assert world.queued == [key_for(NS, EXPORT)]
