"""The launcher pod's parts the corpus does not reach: missing PVCs, root VMIs, affinity merging,
secondary networks, config volumes, SR-IOV device info and the launcher's log settings."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from kubevirt.virt_config import ClusterConfig, LauncherSettings
from kubevirt.virt_controller.services import TemplateError, TemplateParameters, render_launcher_pod
from kubevirt_api.core.v1 import VirtualMachineInstance

PARAMS = TemplateParameters(launcher_image="launcher:1")


def vmi(
    spec: dict[str, Any] | None = None, *, metadata: dict[str, Any] | None = None, root: bool = False
) -> VirtualMachineInstance:
    body: dict[str, Any] = {"domain": {"devices": {}, "resources": {"requests": {"memory": "1Gi"}}}}
    body.update(spec or {})
    return VirtualMachineInstance.from_dict(
        {
            "metadata": {"name": "vm", "namespace": "ns", "uid": "uid-1", **(metadata or {})},
            "spec": body,
            "status": {} if root else {"runtimeUser": 107},
        }
    )


def filesystem_pvc(name: str) -> Mapping[str, Any]:
    return {"spec": {"accessModes": ["ReadWriteMany"], "volumeMode": "Filesystem"}}


def render(
    subject: VirtualMachineInstance, *, settings: LauncherSettings | None = None, **kwargs: Any
) -> dict[str, Any]:
    cluster = ClusterConfig(launcher=settings or LauncherSettings())
    return render_launcher_pod(subject, cluster, PARAMS, filesystem_pvc, **kwargs)


def compute(pod: Mapping[str, Any]) -> dict[str, Any]:
    container = pod["spec"]["containers"][0]
    assert container["name"] == "compute"
    return dict(container)


def test_missing_pvc_is_an_error() -> None:
    subject = vmi({"volumes": [{"name": "disk", "persistentVolumeClaim": {"claimName": "gone"}}]})
    with pytest.raises(TemplateError, match="didn't find PVC gone"):
        render_launcher_pod(subject, ClusterConfig(), PARAMS, lambda name: None)


def test_shared_pvc_is_announced_to_the_launcher() -> None:
    subject = vmi({"volumes": [{"name": "disk", "persistentVolumeClaim": {"claimName": "c"}}]})
    env = {item["name"]: item.get("value") for item in compute(render(subject))["env"]}
    assert env["SHARED_FILESYSTEM_PATHS"] == "/var/run/kubevirt-private/vmi-disks/disk"


def test_root_vmi_runs_as_root_with_sys_nice() -> None:
    pod = render(vmi(root=True))
    assert pod["spec"]["securityContext"] == {"runAsUser": 0, "fsGroup": 107}
    context = compute(pod)["securityContext"]
    assert context["runAsUser"] == 0
    assert context["capabilities"] == {"add": ["NET_BIND_SERVICE", "SYS_NICE"]}
    assert "--run-as-nonroot" not in compute(pod)["command"]


def test_vmi_affinity_gains_the_rejections_in_every_term() -> None:
    terms = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, {"matchFields": []}]
    spec = {
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        },
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "domain": {
            "devices": {},
            "cpu": {"model": "host-model", "features": [{"name": "vmx", "policy": "forbid"}]},
        },
    }
    pod = render(vmi(spec))
    rendered = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    rejected = [
        [e["key"] for e in term["matchExpressions"] if e["operator"] == "DoesNotExist"]
        for term in rendered["nodeSelectorTerms"]
    ]
    assert (
        rejected
        == [["node-labeller.kubevirt.io/obsolete-host-model", "cpu-feature.node.kubevirt.io/vmx"]] * 2
    )
    assert pod["spec"]["tolerations"] == spec["tolerations"]
    # host-model: no model label; a forbidden feature is no requirement either
    assert not any(key.startswith(("cpu-model.", "cpu-feature.")) for key in pod["spec"]["nodeSelector"])


def test_node_selector_merge_order_and_forced_labels() -> None:
    spec = {
        "nodeSelector": {"zone": "vmi", "kubevirt.io/schedulable": "false"},
        "architecture": "ARM64",
        "domain": {
            "devices": {},
            "cpu": {
                "model": "Skylake",
                "dedicatedCpuPlacement": True,
                "features": [{"name": "avx", "policy": "require"}],
            },
            "machine": {"type": "virt"},
        },
    }
    settings = LauncherSettings(node_selectors={"zone": "cluster", "rack": "r1"})
    selector = render(vmi(spec), settings=settings)["spec"]["nodeSelector"]
    assert selector == {
        "kubevirt.io/schedulable": "false",
        "kubernetes.io/arch": "arm64",
        "zone": "vmi",
        "rack": "r1",
        "cpumanager": "true",
        "cpu-model.node.kubevirt.io/Skylake": "true",
        "cpu-feature.node.kubevirt.io/avx": "true",
        "machine-type.node.kubevirt.io/virt": "true",
    }


def test_secondary_multus_network_and_sriov_device_info() -> None:
    spec = {
        "networks": [
            {"name": "default", "pod": {}},
            {"name": "blue", "multus": {"networkName": "other/blue-net"}},
            {"name": "vf", "multus": {"networkName": "sriov-net"}},
        ],
        "domain": {
            "devices": {
                "interfaces": [
                    {"name": "default", "masquerade": {}},
                    {"name": "blue", "bridge": {}, "macAddress": "02:00:00:00:00:01"},
                    {"name": "vf", "sriov": {}},
                ]
            }
        },
    }
    pod = render(vmi(spec))
    networks = json.loads(pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"])
    assert [(n["namespace"], n["name"], n.get("mac")) for n in networks] == [
        ("other", "blue-net", "02:00:00:00:00:01"),
        ("ns", "sriov-net", None),
    ]
    assert all(n["interface"].startswith("pod") and len(n["interface"]) == 14 for n in networks)
    assert {"name": "network-info-annotation", "mountPath": "/etc/podinfo"} in compute(pod)["volumeMounts"]
    assert any(volume["name"] == "network-info-annotation" for volume in pod["spec"]["volumes"])


def test_config_volumes_are_mounted_only_for_disks() -> None:
    spec = {
        "volumes": [
            {"name": "cm", "configMap": {"name": "settings"}},
            {"name": "sec", "secret": {"secretName": "s", "optional": True}},
            {"name": "sa", "serviceAccount": {"serviceAccountName": "robot"}},
        ],
        "domain": {"devices": {"disks": [{"name": "sec", "disk": {}}]}},
    }
    pod = render(vmi(spec))
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert volumes["cm"]["configMap"] == {"name": "settings"}
    assert volumes["sec"]["secret"] == {"secretName": "s", "optional": True}
    mounts = {mount["name"]: mount for mount in compute(pod)["volumeMounts"]}
    assert mounts["sec"] == {
        "name": "sec",
        "mountPath": "/var/run/kubevirt-private/secret/sec",
        "readOnly": True,
    }
    assert "cm" not in mounts
    assert pod["spec"]["serviceAccountName"] == "robot"
    assert pod["spec"]["automountServiceAccountToken"] is True


def test_log_verbosity_label_and_invalid_label() -> None:
    pod = render(vmi(metadata={"labels": {"logVerbosity": "7"}}))
    env = {item["name"]: item.get("value") for item in compute(pod)["env"]}
    assert env["VIRT_LAUNCHER_LOG_VERBOSITY"] == "7"
    assert env["LIBVIRT_DEBUG_LOGS"] == "1"
    console = pod["spec"]["initContainers"][0]
    assert console["name"] == "guest-console-log"
    assert console["env"] == [{"name": "VIRT_LAUNCHER_LOG_VERBOSITY", "value": "7"}]
    with pytest.raises(TemplateError, match="logVerbosity"):
        render(vmi(metadata={"labels": {"logVerbosity": "loud"}}))


def test_backend_storage_needs_its_pvc() -> None:
    subject = vmi({"domain": {"devices": {"tpm": {"persistent": True}}}})
    with pytest.raises(TemplateError, match="backend-storage PVC"):
        render(subject)
    pod = render(subject, backend_storage_pvc="state")
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert volumes["vm-state"] == {"name": "vm-state", "persistentVolumeClaim": {"claimName": "state"}}
    paths = {mount["mountPath"] for mount in compute(pod)["volumeMounts"] if mount["name"] == "vm-state"}
    assert "/var/run/kubevirt-private/libvirt/qemu/swtpm" in paths


def test_grace_period_qemu_timeout_and_pull_secrets() -> None:
    spec = {
        "terminationGracePeriodSeconds": 100,
        "volumes": [{"name": "os", "containerDisk": {"image": "img:1", "imagePullSecret": "pull"}}],
        "domain": {"devices": {"disks": [{"name": "os", "disk": {}}]}},
    }
    params = TemplateParameters(
        launcher_image="launcher:1", qemu_timeout_jitter_seconds=7, image_pull_secret="pull"
    )
    pod = render_launcher_pod(vmi(spec), ClusterConfig(), params, filesystem_pvc)
    assert pod["spec"]["terminationGracePeriodSeconds"] == 130
    command = compute(pod)["command"]
    assert command[command.index("--grace-period-seconds") + 1] == "115"
    assert command[command.index("--qemu-timeout") + 1] == "247s"
    assert pod["spec"]["imagePullSecrets"] == [{"name": "pull"}]
    assert [c["name"] for c in pod["spec"]["containers"]] == ["compute", "volumeos"]


def test_image_volume_gate_mounts_images_instead_of_containers() -> None:
    spec = {
        "volumes": [{"name": "os", "containerDisk": {"image": "img:1"}}],
        "domain": {
            "devices": {"disks": [{"name": "os", "disk": {}}]},
            "firmware": {"kernelBoot": {"container": {"image": "kernel:1"}}},
        },
    }
    pod = render_launcher_pod(
        vmi(spec), ClusterConfig(feature_gates=frozenset({"ImageVolume"})), PARAMS, filesystem_pvc
    )
    assert [c["name"] for c in pod["spec"]["containers"]] == ["compute"]
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["guest-console-log"]
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert volumes["os"]["image"] == {"reference": "img:1"}
    assert volumes["kernel-boot"]["image"] == {"reference": "kernel:1"}
    assert "container-disks" not in volumes
    mounts = {mount["name"]: mount["mountPath"] for mount in compute(pod)["volumeMounts"]}
    assert mounts["os"] == "/var/run/kubevirt-image-volume/disk_0"
    assert "--image-volume" in compute(pod)["command"]


def test_settings_from_a_kubevirt_cr() -> None:
    kubevirt = {
        "spec": {
            "configuration": {
                "developerConfiguration": {
                    "useEmulation": True,
                    "cpuAllocationRatio": 4,
                    "memoryOvercommit": 0,
                    "nodeSelectors": {"pool": "vms"},
                    "logVerbosity": {"virtLauncher": 6},
                    "diskVerification": {"memoryLimit": "1Gi"},
                },
                "imagePullPolicy": "Always",
                "additionalGuestMemoryOverheadRatio": "1.2",
                "virtualMachineOptions": {"disableSerialConsoleLog": {}},
            }
        }
    }
    settings = ClusterConfig.from_kubevirt(kubevirt).launcher
    assert settings == LauncherSettings(
        use_emulation=True,
        cpu_allocation_ratio=4,
        memory_overcommit_percent=100,
        node_selectors={"pool": "vms"},
        launcher_log_verbosity=6,
        disk_verification_memory_limit_bytes=1024**3,
        image_pull_policy="Always",
        additional_guest_memory_overhead_ratio="1.2",
        serial_console_log_disabled=True,
    )
    assert ClusterConfig.from_kubevirt({}).launcher == LauncherSettings()
    pod = render(vmi(), settings=settings)
    assert [c["name"] for c in pod["spec"].get("initContainers", [])] == []
    assert pod["spec"]["nodeSelector"]["pool"] == "vms"
