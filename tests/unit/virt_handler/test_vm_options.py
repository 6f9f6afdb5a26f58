"""The VirtualMachineOptions virt-handler builds from the KubeVirt CR and the VMI, and what the launcher's
domain pipeline makes of them once they crossed the wire."""

from __future__ import annotations

import copy
import json
from typing import Any

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_config import ClusterConfig, DomainSettings
from kubevirt.virt_handler.vm_options import (
    domain_attachment_by_interface,
    preallocated_volumes,
    virtual_machine_options,
)
from kubevirt.virt_launcher.virtwrap.converter import convert_vmi_to_domain
from kubevirt.virt_launcher.virtwrap.domain_pipeline import converter_context
from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt.virtctl.offline_vmi import default_vmi
from kubevirt.virtctl.render import options_from_flags
from kubevirt_api.view import View, VMIView

JSON = dict[str, Any]


def _config(configuration: JSON, annotations: dict[str, str] | None = None) -> ClusterConfig:
    kubevirt = {"metadata": {"annotations": annotations or {}}, "spec": {"configuration": configuration}}
    return ClusterConfig.from_kubevirt(kubevirt)


def test_kubevirts_defaults() -> None:
    settings = ClusterConfig().domain
    assert settings == DomainSettings()
    assert (settings.smbios.manufacturer, settings.smbios.family, settings.smbios.product) == (
        "KubeVirt",
        "KubeVirt",
        "None",
    )
    assert settings.mem_balloon_stats_period == 10
    assert _config({}).domain == settings


def test_the_crs_values_overlay_the_defaults_field_by_field() -> None:
    config = _config(
        {
            "smbios": {"sku": "S", "product": ""},
            "memBalloonStatsPeriod": 0,
            "virtualMachineOptions": {"disableFreePageReporting": {}},
            "network": {
                "binding": {
                    "passt": {"sidecarImage": "x", "domainAttachmentType": "managedTap"},
                    "custom": {"sidecarImage": "y"},
                }
            },
        },
        {"kubevirt.io/vga-display-efi-x86": "true"},
    )
    settings = config.domain
    assert (settings.smbios.sku, settings.smbios.product) == ("S", "None")
    assert settings.mem_balloon_stats_period == 0
    assert settings.free_page_reporting_disabled
    assert settings.vga_display_for_efi_guests
    assert settings.binding_attachments == {"passt": "managedTap"}


def test_unusable_values_keep_the_defaults() -> None:
    # Values of the wrong type are refused with the CR: tests/unit/virt_config/test_cluster_config.py.
    settings = _config(
        {
            "smbios": {"manufacturer": "", "family": None},
            "memBalloonStatsPeriod": -1,
            "network": {"binding": {"custom": {"domainAttachmentType": ""}, "other": None}},
        }
    ).domain
    assert settings == DomainSettings()
    assert _config({"memBalloonStatsPeriod": 2**32}).domain == DomainSettings()


def test_interfaces_are_attached_by_name() -> None:
    interfaces = [
        {"name": "pod", "masquerade": {}},
        {"name": "br", "bridge": {}},
        {"name": "p", "binding": {"name": "passt"}},
        {"name": "t", "binding": {"name": "tapper"}},
        {"name": "n", "binding": {"name": "unknown"}},
        {"name": "s", "sriov": {}},
    ]
    found = domain_attachment_by_interface(
        [View(interface) for interface in interfaces], {"passt": "managedTap", "tapper": "tap"}
    )
    assert found == {"pod": "tap", "br": "tap", "p": "tap", "t": "tap"}


def test_only_preallocated_claims_are_listed() -> None:
    vmi = {
        "status": {
            "volumeStatus": [
                {"name": "a", "persistentVolumeClaimInfo": {"preallocated": True}},
                {"name": "b", "persistentVolumeClaimInfo": {}},
                {"name": "c"},
            ]
        }
    }
    assert preallocated_volumes(VMIView(vmi)) == ["a"]
    assert preallocated_volumes(VMIView({})) == []


def _vmi() -> JSON:
    return {
        "metadata": {"name": "vm", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "domain": {
                "resources": {"requests": {"memory": "128Mi"}},
                "firmware": {"bootloader": {"efi": {"secureBoot": False}}},
                "features": {"smm": {"enabled": False}},
                "devices": {
                    "disks": [{"name": "data", "disk": {"bus": "virtio"}}, {"name": "thin", "disk": {}}],
                    "interfaces": [{"name": "default", "binding": {"name": "tapper"}}],
                },
            },
            "networks": [{"name": "default", "pod": {}}],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "thin", "persistentVolumeClaim": {"claimName": "thin"}},
            ],
        },
        "status": {
            "volumeStatus": [
                {"name": "data", "target": "vda", "persistentVolumeClaimInfo": {"preallocated": True}},
                # Every volume has a status (KubeVirt's converter leaves out a disk without one).
                {"name": "thin", "target": "vdb", "persistentVolumeClaimInfo": {}},
            ]
        },
    }


def test_the_launcher_builds_the_domain_from_what_the_handler_sent() -> None:
    config = _config(
        {
            "smbios": {"manufacturer": "Acme"},
            "memBalloonStatsPeriod": 4,
            "network": {"binding": {"tapper": {"domainAttachmentType": "tap"}}},
        },
        {"kubevirt.io/vga-display-efi-x86": ""},
    )
    vmi = _vmi()
    sent = virtual_machine_options(vmi, config)
    request = cmd_pb2.VMIRequest(vmi=cmd_pb2.VMI(vmiJson=json.dumps(vmi).encode()), options=sent)
    received = cmd_pb2.VMIRequest.FromString(request.SerializeToString()).options
    context = converter_context(received, NodeFacts(emulation=True))
    assert context.smbios.manufacturer == "Acme"
    assert context.memballoon_stats_period == 4
    assert dict(context.interface_domain_attachment) == {"default": "tap"}
    assert context.discard_ignore == {"data"}
    assert not context.bochs_for_efi_guests

    domain = convert_vmi_to_domain(default_vmi(copy.deepcopy(vmi), options_from_flags([])), context)
    discard = {d.alias.name: d.driver.discard for d in domain.devices.disks if d.alias and d.driver}
    assert discard == {"ua-data": None, "ua-thin": "unmap"}  # the preallocated claim keeps its blocks
    assert [v.model.type for v in domain.devices.video] == ["vga"]
    assert [i.type for i in domain.devices.interfaces] == ["ethernet"]  # the plugin's NIC, a tap


def test_a_handler_that_sends_nothing_leaves_the_launchers_defaults() -> None:
    context = converter_context(cmd_pb2.VMIRequest().options, NodeFacts(emulation=True))
    assert context.bochs_for_efi_guests
    assert context.discard_ignore == frozenset()
    assert dict(context.interface_domain_attachment) == {}
    assert context.memballoon_stats_period == 10
