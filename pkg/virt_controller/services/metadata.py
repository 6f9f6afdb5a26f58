"""The virt-launcher pod's labels, annotations and owner reference."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kubevirt.network.istio import proxy_injection_enabled
from kubevirt.virt_controller.services import vmi_facts
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.constants import (
    API_VERSION,
    APP_LABEL,
    CONTROLLER_API_LATEST_VERSION_OBSERVED_ANNOTATION,
    CONTROLLER_API_STORAGE_VERSION_OBSERVED_ANNOTATION,
    CREATED_BY_LABEL,
    DOMAIN_ANNOTATION,
    MIGRATION_TRANSPORT_UNIX_ANNOTATION,
    VIRTUAL_MACHINE_NAME_LABEL,
)

DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
EVICT_ONLY_ANNOTATION = "descheduler.alpha.kubernetes.io/request-evict-only"
MULTUS_NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
MULTUS_DEFAULT_NETWORK_ANNOTATION = "v1.multus-cni.io/default-network"
ISTIO_KUBEVIRT_INTERFACES_ANNOTATION = "traffic.sidecar.istio.io/kubevirtInterfaces"
ISTIO_REROUTE_ANNOTATION = "istio.io/reroute-virtual-interfaces"
POD_BRIDGE_NAME = "k6t-eth0"
SKIP_BACKUP_HOOKS_ANNOTATION = "kubevirt.io/skip-backup-hooks"
_HASHED_INTERFACE_PREFIX = "pod"
_HASHED_INTERFACE_LENGTH = 11
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # what Go's strconv.ParseBool reads as true


def pod_labels(vmi: VirtualMachineInstance, hostname: str) -> dict[str, str]:
    uid = (vmi.metadata.uid if vmi.metadata is not None else None) or ""
    return {
        **vmi_facts.vmi_labels(vmi),
        APP_LABEL: "virt-launcher",
        CREATED_BY_LABEL: uid,
        VIRTUAL_MACHINE_NAME_LABEL: hostname,
    }


def pod_annotations(vmi: VirtualMachineInstance) -> dict[str, str]:
    """The VMI's annotations (less kubectl's and KubeVirt's API-version bookkeeping) and the launcher's."""
    name = (vmi.metadata.name if vmi.metadata is not None else None) or ""
    annotations = {DOMAIN_ANNOTATION: name}
    skipped = (
        "kubectl.kubernetes.io",
        CONTROLLER_API_STORAGE_VERSION_OBSERVED_ANNOTATION,
        CONTROLLER_API_LATEST_VERSION_OBSERVED_ANNOTATION,
    )
    annotations.update(
        {key: value for key, value in vmi_facts.vmi_annotations(vmi).items() if not key.startswith(skipped)}
    )
    annotations[DEFAULT_CONTAINER_ANNOTATION] = "compute"
    annotations[MIGRATION_TRANSPORT_UNIX_ANNOTATION] = "true"
    annotations[EVICT_ONLY_ANNOTATION] = ""
    annotations.update(network_annotations(vmi))
    annotations.update(backup_hook_annotations(vmi))
    return annotations


def owner_reference(vmi: VirtualMachineInstance) -> dict[str, Any]:
    metadata = vmi.metadata
    return {
        "apiVersion": API_VERSION,
        "kind": "VirtualMachineInstance",
        "name": (metadata.name if metadata is not None else None) or "",
        "uid": (metadata.uid if metadata is not None else None) or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def backup_hook_annotations(vmi: VirtualMachineInstance) -> dict[str, str]:
    """Velero freezes the guest's filesystems around a backup, unless the VMI opts out."""
    if vmi_facts.vmi_annotations(vmi).get(SKIP_BACKUP_HOOKS_ANNOTATION) in _GO_TRUE:
        return {}
    metadata = vmi.metadata
    name = _go_quote((metadata.name if metadata is not None else None) or "")
    namespace = _go_quote((metadata.namespace if metadata is not None else None) or "")

    def command(action: str) -> str:
        return f'["/usr/bin/virt-freezer", "--{action}", "--name", {name}, "--namespace", {namespace}]'

    return {
        "pre.hook.backup.velero.io/container": "compute",
        "pre.hook.backup.velero.io/command": command("freeze"),
        "pre.hook.backup.velero.io/timeout": "60s",
        "post.hook.backup.velero.io/container": "compute",
        "post.hook.backup.velero.io/command": command("unfreeze"),
    }


def hashed_interface_name(network_name: str) -> str:
    digest = hashlib.sha256(network_name.encode()).hexdigest()
    return _HASHED_INTERFACE_PREFIX + digest[:_HASHED_INTERFACE_LENGTH]


def network_annotations(vmi: VirtualMachineInstance) -> dict[str, str]:
    """Multus networks for the secondary interfaces, the default network, and Istio's bridge hints."""
    namespace = (vmi.metadata.namespace if vmi.metadata is not None else None) or ""
    interfaces = [i for i in vmi_facts.devices(vmi).interfaces or [] if i.state != "absent"]
    by_name = {iface.name: iface for iface in interfaces}
    networks = [n for n in vmi.spec.networks or [] if n.name in by_name]
    elements: list[dict[str, str]] = []
    for network in networks:
        if network.multus is None or network.multus.default:
            continue
        full_name = network.multus.network_name
        nad_namespace, _, nad_name = (
            full_name.partition("/") if "/" in full_name else (namespace, "", full_name)
        )
        element = {"name": nad_name, "namespace": nad_namespace}
        mac = by_name[network.name].mac_address
        if mac:
            element["mac"] = mac
        element["interface"] = hashed_interface_name(network.name)
        elements.append(element)
    annotations: dict[str, str] = {}
    if elements:
        annotations[MULTUS_NETWORKS_ANNOTATION] = json.dumps(elements, separators=(",", ":"))
    defaults = [n for n in vmi.spec.networks or [] if n.multus is not None and n.multus.default]
    if defaults:
        assert defaults[0].multus is not None
        annotations[MULTUS_DEFAULT_NETWORK_ANNOTATION] = defaults[0].multus.network_name
    if any(iface.masquerade is not None for iface in vmi_facts.devices(vmi).interfaces or []):
        annotations[ISTIO_KUBEVIRT_INTERFACES_ANNOTATION] = POD_BRIDGE_NAME
        annotations[ISTIO_REROUTE_ANNOTATION] = POD_BRIDGE_NAME
    return annotations


def istio_proxy_injected(vmi: VirtualMachineInstance) -> bool:
    return proxy_injection_enabled(vmi_facts.vmi_annotations(vmi))
