"""VMI spec rules the conformance corpus does not reach, each from a valid defaulted VMI plus one change."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubevirt.admission.vmi_create import admit_vmi_create
from kubevirt.virt_config import ClusterConfig

BASE = json.loads(
    (
        Path(__file__).parents[2]
        / "testdata"
        / "conformance"
        / "vmi"
        / "valid"
        / "001-minimal-containerdisk.defaults.json"
    ).read_text()
)
Edit = Callable[[dict[str, Any]], None]


def _spec(vmi: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = vmi["spec"]
    return spec


def _disk(vmi: dict[str, Any]) -> dict[str, Any]:
    disk: dict[str, Any] = _spec(vmi)["domain"]["devices"]["disks"][0]
    return disk


def _iface(vmi: dict[str, Any]) -> dict[str, Any]:
    iface: dict[str, Any] = _spec(vmi)["domain"]["devices"]["interfaces"][0]
    return iface


def _add_volume(vmi: dict[str, Any], volume: dict[str, Any]) -> None:
    _spec(vmi)["volumes"].append(volume)
    _spec(vmi)["domain"]["devices"]["disks"].append({"name": volume["name"], "disk": {"bus": "virtio"}})


def _masquerade_ports(*ports: dict[str, Any]) -> Edit:
    def edit(vmi: dict[str, Any]) -> None:
        _spec(vmi)["domain"]["devices"]["interfaces"][0] = {
            "name": "default",
            "masquerade": {},
            "ports": list(ports),
        }

    return edit


PORT_RANGE = "Port field must be in range 0 < x < 65536."
CASES: list[tuple[str, Edit, tuple[str, str, str]]] = [
    (
        "firmware serial characters",
        lambda v: _spec(v)["domain"]["firmware"].update(serial="bad serial!"),
        (
            "FieldValueInvalid",
            "spec.domain.firmware.serial",
            "spec.domain.firmware.serial must be made up of the "
            "following characters [A-Za-z0-9_.+-], if specified",
        ),
    ),
    (
        "acpi without tables",
        lambda v: _spec(v)["domain"]["firmware"].update(acpi={}),
        ("FieldValueInvalid", "spec.acpi", "ACPI was set but no SLIC nor MSDM volume reference was set"),
    ),
    (
        "acpi table not a secret",
        lambda v: _spec(v)["domain"]["firmware"].update(acpi={"slicNameRef": "rootdisk"}),
        ("FieldValueInvalid", "spec.acpi.slicNameRef", "spec.acpi refers to Volume of unsupported type."),
    ),
    (
        "disk cache mode",
        lambda v: _disk(v).update(cache="unsafe"),
        (
            "FieldValueInvalid",
            "spec.domain.devices.disks[0].cache",
            "spec.domain.devices.disks[0].cache has invalid value unsafe",
        ),
    ),
    (
        "disk io mode (KubeVirt's doubled path)",
        lambda v: _disk(v).update(io="io_uring"),
        (
            "FieldValueNotSupported",
            "spec.domain.devices.disks.domain.devices.disks[0].io",
            "Disk IO mode for spec.domain.devices.disks is not "
            "supported. Supported modes are: native, threads.",
        ),
    ),
    (
        "disk serial characters",
        lambda v: _disk(v).update(serial="a b"),
        (
            "FieldValueInvalid",
            "spec.domain.devices.disks[0].serial",
            "spec.domain.devices.disks[0] must be made up of the "
            "following characters [A-Za-z0-9_.+-], if specified",
        ),
    ),
    (
        "block size below the minimum",
        lambda v: _disk(v).update(blockSize={"custom": {"logical": 256, "physical": 256}}),
        (
            "FieldValueInvalid",
            "spec.domain.devices.disks[0].blockSize.custom.logical",
            "Provided size of 256 is less than the supported minimum size of 512",
        ),
    ),
    (
        "block size matching with a custom value",
        lambda v: _disk(v).update(blockSize={"custom": {"logical": 512, "physical": 512}, "matchVolume": {}}),
        (
            "FieldValueInvalid",
            "spec.domain.devices.disks[0].blockSize",
            "Block size matching can't be enabled together with a custom value",
        ),
    ),
    (
        "two targets on one disk",
        lambda v: _disk(v).update(cdrom={"bus": "sata"}),
        (
            "FieldValueInvalid",
            "spec.domain.devices.disks[0]",
            "spec.domain.devices.disks[0] can only have a single target type defined",
        ),
    ),
    (
        "virtio cdrom",
        lambda v: _disk(v).update(disk=None, cdrom={"bus": "virtio"}),
        (
            "FieldValueInvalid",
            "spec.domain.devices.disks[0].cdrom.bus",
            "Bus type virtio is invalid for CD-ROM device",
        ),
    ),
    (
        "lun on a container disk",
        lambda v: _disk(v).update(disk=None, lun={"bus": "scsi"}),
        (
            "FieldValueInvalid",
            "spec.domain.devices.disks[0].lun",
            "spec.domain.devices.disks[0].lun can only be mapped "
            "to a DataVolume or PersistentVolumeClaim volume.",
        ),
    ),
    (
        "disk name not a DNS label (KubeVirt's doubled path)",
        lambda v: (_disk(v).update(name="Root_Disk"), _spec(v)["volumes"][0].update(name="Root_Disk")),
        (
            "FieldValueInvalid",
            "spec.domain.devices.disks.domain.devices.disks[0].name",
            "a lowercase RFC 1123 label must consist of lower "
            "case alphanumeric characters or '-', and must start "
            "and end with an alphanumeric character (e.g. 'my-name', "
            " or '123-abc', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
    ),
    (
        "disk name with dots",
        lambda v: (_disk(v).update(name="root.disk"), _spec(v)["volumes"][0].update(name="root.disk")),
        (
            "FieldValueInvalid",
            "spec.domain.devices.disks.domain.devices.disks[0].name",
            "must not contain dots",
        ),
    ),
    (
        "userData not base64",
        lambda v: _add_volume(v, {"name": "ci", "cloudInitNoCloud": {"userDataBase64": "%%%"}}),
        (
            "FieldValueInvalid",
            "spec.volumes[1].cloudInitNoCloud.userDataBase64",
            "spec.volumes[1].cloudInitNoCloud.userDataBase64.cloudInitNoCloud.userDataBase64 "
            "is not a valid base64 value.",
        ),
    ),
    (
        "two user data sources",
        lambda v: _add_volume(
            v, {"name": "ci", "cloudInitConfigDrive": {"userData": "x", "userDataBase64": "eA=="}}
        ),
        (
            "FieldValueInvalid",
            "spec.volumes[1].cloudInitConfigDrive",
            "spec.volumes[1].cloudInitConfigDrive must have only one userdatasource set.",
        ),
    ),
    (
        "network data too long",
        lambda v: _add_volume(v, {"name": "ci", "cloudInitNoCloud": {"networkData": "x" * 2049}}),
        (
            "FieldValueInvalid",
            "spec.volumes[1].cloudInitNoCloud",
            "spec.volumes[1].cloudInitNoCloud networkdata exceeds "
            "2048 byte limit. Should use NetworkDataSecretRef for "
            "larger data.",
        ),
    ),
    (
        "data volume without a name",
        lambda v: _add_volume(v, {"name": "dv", "dataVolume": {"name": ""}}),
        ("FieldValueRequired", "spec.volumes[1].name", "DataVolume 'name' must be set"),
    ),
    (
        "config map without a name",
        lambda v: _add_volume(v, {"name": "cm", "configMap": {}}),
        (
            "FieldValueInvalid",
            "spec.volumes[1].configMap.name",
            "spec.volumes[1].configMap.name is a required field",
        ),
    ),
    (
        "two service account volumes",
        lambda v: (
            _add_volume(v, {"name": "sa1", "serviceAccount": {"serviceAccountName": "a"}}),
            _add_volume(v, {"name": "sa2", "serviceAccount": {"serviceAccountName": "b"}}),
        ),
        ("FieldValueInvalid", "spec.volumes", "spec.volumes must have max one serviceAccount volume set"),
    ),
    (
        "container disk path with relative parts",
        lambda v: _spec(v)["volumes"][0]["containerDisk"].update(path="/disk/../etc"),
        (
            "FieldValueInvalid",
            "spec.volumes[0].containerDisk",
            "spec.volumes[0].containerDisk must be an absolute path to a file without relative components",
        ),
    ),
    (
        "ssh key without a propagation method",
        lambda v: _spec(v).update(
            accessCredentials=[{"sshPublicKey": {"source": {"secret": {"secretName": "s"}}}}]
        ),
        (
            "FieldValueInvalid",
            "spec.accessCredentials[0].sshPublicKey.propagationMethod",
            "spec.accessCredentials[0] must have exactly one propagationMethod set",
        ),
    ),
    (
        "dns policy None without config",
        lambda v: _spec(v).update(dnsPolicy="None"),
        ("FieldValueRequired", "spec.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"),
    ),
    (
        "dns nameserver not an address",
        lambda v: _spec(v).update(dnsConfig={"nameservers": ["dns.example"]}),
        ("FieldValueInvalid", "nameservers", "must be valid IP address: dns.example"),
    ),
    (
        "unknown dns policy",
        lambda v: _spec(v).update(dnsPolicy="Sometimes"),
        (
            "FieldValueNotSupported",
            "spec.dnsPolicy",
            "DNSPolicy: Sometimes is not supported, valid values: "
            "[ClusterFirstWithHostNet ClusterFirst Default None ]",
        ),
    ),
    (
        "probe with two handlers",
        lambda v: _spec(v).update(readinessProbe={"exec": {"command": ["true"]}, "guestAgentPing": {}}),
        (
            "FieldValueInvalid",
            "spec.readinessProbe",
            "spec.readinessProbe must have exactly one probe type set",
        ),
    ),
    (
        "paused start with a liveness probe",
        lambda v: _spec(v).update(startStrategy="Paused", livenessProbe={"exec": {"command": ["true"]}}),
        (
            "FieldValueInvalid",
            "spec.startStrategy",
            "either spec.startStrategy or spec.livenessProbe should "
            "be provided.Pausing VMI with LivenessProbe is not "
            "supported",
        ),
    ),
    (
        "isolate emulator thread without dedicated cpus",
        lambda v: _spec(v)["domain"]["cpu"].update(isolateEmulatorThread=True),
        (
            "FieldValueInvalid",
            "spec.domain.cpu.isolateEmulatorThread",
            "IsolateEmulatorThread should be only set in combination with DedicatedCPUPlacement",
        ),
    ),
    (
        "unknown cpu feature policy",
        lambda v: _spec(v)["domain"]["cpu"].update(features=[{"name": "vmx", "policy": "maybe"}]),
        (
            "FieldValueNotSupported",
            "spec.domain.cpu.features[0].policy",
            "CPU feature vmx uses policy maybe that is not supported.",
        ),
    ),
    (
        "dedicated cpus with three threads",
        lambda v: (
            _spec(v)["domain"]["cpu"].update(dedicatedCpuPlacement=True, threads=3),
            _spec(v)["domain"]["resources"].update(limits={"memory": "128Mi"}),
        ),
        (
            "FieldValueInvalid",
            "spec.domain.cpu.dedicatedCpuPlacement",
            "Not more than two threads must be provided at "
            "spec.domain.cpu.threads (got 3) when DedicatedCPUPlacement "
            "is true",
        ),
    ),
    (
        "supplemental pool without a thread count",
        lambda v: _spec(v)["domain"].update(ioThreadsPolicy="supplementalPool"),
        (
            "FieldValueInvalid",
            "spec.domain.ioThreads.count",
            "the number of iothreads needs to be set and positive for the dedicated policy",
        ),
    ),
    (
        "interface name characters",
        lambda v: (_iface(v).update(name="eth 0"), _spec(v)["networks"][0].update(name="eth 0")),
        (
            "FieldValueInvalid",
            "spec.domain.devices.interfaces[0].name",
            "Network interface name can only contain alphabetical "
            "characters, numbers, dashes (-) or underscores (_)",
        ),
    ),
    (
        "masquerade on the reserved MAC",
        lambda v: (_iface(v).pop("bridge"), _iface(v).update(masquerade={}, macAddress="02:00:00:00:00:00")),
        (
            "FieldValueInvalid",
            "spec.domain.devices.interfaces[0].macAddress",
            "The requested MAC address is reserved for the in-pod bridge. Please choose another one.",
        ),
    ),
    (
        "MAC address too long",
        lambda v: _iface(v).update(macAddress="02:00:00:00:00:00:00:01"),
        (
            "FieldValueInvalid",
            "spec.domain.devices.interfaces[0].macAddress",
            "interface spec.domain.devices.interfaces[0].name has "
            "MAC address (02:00:00:00:00:00:00:01) that is too long.",
        ),
    ),
    (
        "absent state on the default network",
        lambda v: _iface(v).update(state="absent"),
        (
            "FieldValueInvalid",
            "spec.domain.devices.interfaces[0].state",
            '"default" interface\'s state "absent" is not supported on default networks',
        ),
    ),
    (
        "port name twice",
        lambda v: _iface(v).update(ports=[{"name": "http", "port": 80}, {"name": "http", "port": 81}]),
        (
            "FieldValueDuplicate",
            "spec.domain.devices.interfaces[0].ports[1].name",
            "Duplicate name of the port: http",
        ),
    ),
    (
        "port zero",
        _masquerade_ports({"port": 80}, {"name": "http", "port": 0}),
        ("FieldValueRequired", "spec.domain.devices.interfaces[0].ports[1]", "Port field is mandatory."),
    ),
    (
        "port left out",
        _masquerade_ports({"name": "http"}),
        ("FieldValueRequired", "spec.domain.devices.interfaces[0].ports[0]", "Port field is mandatory."),
    ),
    (
        "negative port",
        _masquerade_ports({"port": -1}),
        ("FieldValueInvalid", "spec.domain.devices.interfaces[0].ports[0]", PORT_RANGE),
    ),
    (
        "port above the range",
        _masquerade_ports({"port": 80}, {"port": 65537}),
        ("FieldValueInvalid", "spec.domain.devices.interfaces[0].ports[1]", PORT_RANGE),
    ),
    (
        "network with two sources",
        lambda v: _spec(v)["networks"][0].update(multus={"networkName": "n"}),
        ("FieldValueRequired", "spec.networks[0]", "should have only one network type"),
    ),
    (
        "hyperv dependency disabled",
        lambda v: _spec(v)["domain"]["features"].update(
            hyperv={"synic": {"enabled": True}, "vpindex": {"enabled": False}}
        ),
        (
            "FieldValueInvalid",
            "spec.domain.features.hyperv.domain.features.hyperv.synic",
            "'spec.domain.features.hyperv.domain.features.hyperv.synic' requires "
            "'spec.domain.features.hyperv.domain.features.hyperv.vpindex', which was disabled.",
        ),
    ),
    (
        "diag288 watchdog on amd64",
        lambda v: _spec(v)["domain"]["devices"].update(watchdog={"name": "w", "diag288": {}}),
        (
            "FieldValueNotSupported",
            "spec.domain.devices.watchdog",
            "amd64 only supports I6300ESB watchdog device",
        ),
    ),
    (
        "tablet on an unknown bus",
        lambda v: _spec(v)["domain"]["devices"].update(
            inputs=[{"name": "t", "type": "tablet", "bus": "ps2"}]
        ),
        (
            "FieldValueInvalid",
            "spec.domain.devices.inputs[0].bus",
            "Input device can have only virtio or usb bus.",
        ),
    ),
    (
        "vsock without its gate",
        lambda v: _spec(v)["domain"]["devices"].update(autoattachVSOCK=True),
        (
            "FieldValueInvalid",
            "spec.domain.devices.autoattachVSOCK",
            "VSOCK feature gate is not enabled in kubevirt-config",
        ),
    ),
    (
        "SEV without its gate",
        lambda v: _spec(v)["domain"].update(launchSecurity={"sev": {}}),
        (
            "FieldValueInvalid",
            "spec.launchSecurity",
            "WorkloadEncryptionSEV feature gate is not enabled in kubevirt-config",
        ),
    ),
    (
        "ignition annotation without its gate",
        lambda v: v["metadata"].update(annotations={"kubevirt.io/ignitiondata": "{}"}),
        (
            "FieldValueInvalid",
            "metadata.annotations",
            "ExperimentalIgnitionSupport feature gate is not enabled in kubevirt-config, invalid entry "
            "metadata.annotations.kubevirt.io/ignitiondata",
        ),
    ),
    (
        "kernel args without a kernel",
        lambda v: _spec(v)["domain"]["firmware"].update(kernelBoot={"kernelArgs": "console=ttyS0"}),
        (
            "FieldValueInvalid",
            "spec.domain.firmware.kernelBoot.kernelArgs",
            "kernel arguments cannot be provided without an external kernel",
        ),
    ),
]


@pytest.mark.parametrize(("edit", "expected"), [(e, x) for _, e, x in CASES], ids=[n for n, _, _ in CASES])
def test_rule(edit: Edit, expected: tuple[str, str, str]) -> None:
    vmi = copy.deepcopy(BASE)
    edit(vmi)
    causes = [(c.type, c.field, c.message) for c in admit_vmi_create(vmi, ClusterConfig())]
    assert expected in causes


def test_the_base_is_valid() -> None:
    assert admit_vmi_create(copy.deepcopy(BASE), ClusterConfig()) == []


@pytest.mark.parametrize("port", [1, 65535, 65536])
def test_port_admitted(port: int) -> None:
    # 65536 too: KubeVirt v1.6.6 refuses only `port > 65536`, despite its message. The network plan
    # refuses it on the node, naming the field, before nft would see it.
    vmi = copy.deepcopy(BASE)
    _masquerade_ports({"port": port})(vmi)
    assert admit_vmi_create(vmi, ClusterConfig()) == []


@pytest.mark.parametrize("kind", ["cloudInitNoCloud", "cloudInitConfigDrive"])
@pytest.mark.parametrize("source", [{"secretRef": {"name": "u"}}, {"networkDataSecretRef": {"name": "n"}}])
def test_a_secret_alone_is_a_cloud_init_source(kind: str, source: dict[str, Any]) -> None:
    # The API's key for user data from a Secret is "secretRef" (Go's UserDataSecretRef).
    vmi = copy.deepcopy(BASE)
    _add_volume(vmi, {"name": "ci", kind: source})
    assert admit_vmi_create(vmi, ClusterConfig()) == []


def test_user_data_from_a_secret_and_inline_is_two_sources() -> None:
    vmi = copy.deepcopy(BASE)
    _add_volume(vmi, {"name": "ci", "cloudInitNoCloud": {"secretRef": {"name": "u"}, "userData": "x"}})
    assert [(c.field, c.message) for c in admit_vmi_create(vmi, ClusterConfig())] == [
        (
            "spec.volumes[1].cloudInitNoCloud",
            "spec.volumes[1].cloudInitNoCloud must have only one userdatasource set.",
        )
    ]


# KubeVirt validates the affinity with the spec path itself, so "affinity" is not in the paths.
NODE_TERMS = "spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"

SCHEDULING_CASES: list[tuple[str, dict[str, Any], tuple[str, str]]] = [
    (
        "node selector operator",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}
                        ]
                    }
                }
            }
        },
        (
            f"{NODE_TERMS}[0].matchExpressions[0].operator",
            f"{NODE_TERMS}[0].matchExpressions[0].operator: "
            'Invalid value: "Near": not a valid selector operator',
        ),
    ),
    (
        "In without values",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]
                    }
                }
            }
        },
        (
            f"{NODE_TERMS}[0].matchExpressions[0].values",
            f"{NODE_TERMS}[0].matchExpressions[0].values: Required "
            "value: must be specified when `operator` is "
            "'In' or 'NotIn'",
        ),
    ),
    (
        "no node selector terms",
        {
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
            }
        },
        (NODE_TERMS, f"{NODE_TERMS}: Required value: must have at least one node selector term"),
    ),
    (
        "preferred weight",
        {
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
                    ]
                }
            }
        },
        (
            "spec.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            "spec.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: "
            "0: must be in the range 1-100",
        ),
    ),
    (
        "pod affinity without topology key",
        {
            "affinity": {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}
            }
        },
        (
            "spec.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
            "spec.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: "
            "can not be empty",
        ),
    ),
    (
        "spread skew",
        {
            "topologySpreadConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        },
        (
            "spec.topologySpreadConstraints[0].maxSkew",
            "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        ),
    ),
    (
        "spread action",
        {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]},
        (
            "spec.topologySpreadConstraints[0].whenUnsatisfiable",
            "spec.topologySpreadConstraints[0].whenUnsatisfiable: "
            'Unsupported value: "Maybe": supported values: '
            '"DoNotSchedule", "ScheduleAnyway"',
        ),
    ),
    (
        "spread duplicate",
        {
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            ]
        },
        (
            "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
            "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "
            '"{zone, DoNotSchedule}"',
        ),
    ),
]


@pytest.mark.parametrize(
    ("extra", "expected"), [(e, x) for _, e, x in SCHEDULING_CASES], ids=[n for n, _, _ in SCHEDULING_CASES]
)
def test_scheduling_rule(extra: dict[str, Any], expected: tuple[str, str]) -> None:
    vmi = copy.deepcopy(BASE)
    _spec(vmi).update(extra)
    causes = [(c.type, c.field, c.message) for c in admit_vmi_create(vmi, ClusterConfig())]
    assert ("FieldValueInvalid", *expected) in causes


def test_valid_scheduling_is_accepted() -> None:
    vmi = copy.deepcopy(BASE)
    _spec(vmi).update(
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
                            ]
                        }
                    ]
                }
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "db"}},
                        },
                    }
                ]
            },
        },
        topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
        ],
    )
    assert admit_vmi_create(vmi, ClusterConfig()) == []


def test_arm64_settings() -> None:
    vmi = copy.deepcopy(BASE)
    _spec(vmi)["architecture"] = "arm64"
    _spec(vmi)["domain"]["firmware"]["bootloader"] = {"efi": {}}
    _spec(vmi)["domain"]["devices"]["sound"] = {"name": "s"}
    gated = ClusterConfig.build(feature_gates=["MultiArchitecture"])
    causes = [
        (c.field, c.message) for c in admit_vmi_create(vmi, gated) if c.type == "FieldValueNotSupported"
    ]
    assert causes == [
        (
            "spec.domain.firmware.bootloader.efi.secureboot",
            "UEFI secure boot is currently not supported on aarch64 Arch",
        ),
        ("spec.domain.cpu.model", "currently, host-passthrough is the only model supported on Arm64"),
        (
            "spec.domain.devices.disks[0].disk.bus",
            "Arm64 not support this disk bus type, please use virtio or scsi",
        ),
        ("spec.domain.devices.sound", "Arm64 not support sound device"),
    ]
