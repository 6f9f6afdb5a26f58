"""The objects of one VM's request chain (VM, VMI, launcher pod, node, virt-handler pod, migration),
in the states the controllers would write, for tests of ``virtctl diagnose``.

Each builder returns plain JSON with its ``status``; :func:`put` stores one on a real API server, where
status goes through the status subresource.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from kubevirt.client import (
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINES,
    KubeApi,
    Resource,
)

JSON = dict[str, Any]
NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
KVM = "devices.kubevirt.io/kvm"
TUN = "devices.kubevirt.io/tun"
LAUNCHER_IMAGE = "registry.local/virt-launcher:v1.6"


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, status: str, reason: str = "", message: str = "") -> JSON:
    found: JSON = {"type": type_, "status": status}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


def vm(name: str, namespace: str, *, run_strategy: str = "Always", status: JSON | None = None) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runStrategy": run_strategy,
            "template": {"spec": {"domain": {"devices": {}, "memory": {"guest": "128Mi"}}}},
        },
        "status": status if status is not None else {"printableStatus": "Stopped"},
    }


def vmi(
    name: str,
    namespace: str,
    *,
    phase: str = "Running",
    node: str | None = "node-a",
    conditions: list[JSON] | None = None,
    uid: str | None = None,
    extra_status: JSON | None = None,
) -> JSON:
    status: JSON = {"phase": phase, **(extra_status or {})}
    if node:
        status["nodeName"] = node
    if conditions is not None:
        status["conditions"] = conditions
    metadata: JSON = {"name": name, "namespace": namespace}
    if uid:
        metadata["uid"] = uid
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": metadata,
        "spec": {"domain": {"devices": {}, "memory": {"guest": "128Mi"}}},
        "status": status,
    }


def ready_conditions() -> list[JSON]:
    return [condition("Ready", "True"), condition("LiveMigratable", "True")]


def running_container(name: str = "compute", image: str = LAUNCHER_IMAGE) -> JSON:
    return {
        "name": name,
        "image": image,
        "ready": True,
        "restartCount": 0,
        "imageID": "",
        "state": {"running": {"startedAt": stamp(NOW - timedelta(minutes=3))}},
    }


def waiting_container(reason: str, message: str = "", image: str = LAUNCHER_IMAGE) -> JSON:
    waiting: JSON = {"reason": reason}
    if message:
        waiting["message"] = message
    return {
        "name": "compute",
        "image": image,
        "ready": False,
        "restartCount": 0,
        "imageID": "",
        "state": {"waiting": waiting},
    }


def launcher_pod(
    vmi_name: str,
    namespace: str,
    vmi_uid: str,
    *,
    node: str | None = "node-a",
    requests: Mapping[str, str] | None = None,
    phase: str = "Running",
    conditions: list[JSON] | None = None,
    containers: list[JSON] | None = None,
    labels: Mapping[str, str] | None = None,
    name: str | None = None,
) -> JSON:
    """A launcher pod as virt-controller renders it (the parts diagnose reads)."""
    wanted = dict(requests or {"cpu": "100m", "memory": "300Mi", TUN: "1"})
    limits = {key: value for key, value in wanted.items() if key.startswith("devices.kubevirt.io/")}
    spec: JSON = {
        "containers": [
            {
                "name": "compute",
                "image": LAUNCHER_IMAGE,
                "resources": {"requests": wanted, "limits": limits},
            }
        ],
        "nodeSelector": {"kubevirt.io/schedulable": "true"},
        "restartPolicy": "Never",
    }
    if node:
        spec["nodeName"] = node
    status: JSON = {"phase": phase}
    if conditions is not None:
        status["conditions"] = conditions
    elif node:
        status["conditions"] = [condition("PodScheduled", "True"), condition("Ready", "True")]
    if containers is not None:
        status["containerStatuses"] = containers
    elif node and phase == "Running":
        status["containerStatuses"] = [running_container()]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name or f"virt-launcher-{vmi_name}-abcde",
            "namespace": namespace,
            "labels": {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": vmi_uid, **(labels or {})},
            "annotations": {"kubevirt.io/domain": vmi_name},
        },
        "spec": spec,
        "status": status,
    }


def node(
    name: str = "node-a",
    *,
    allocatable: Mapping[str, str] | None = None,
    schedulable: str | None = "true",
    heartbeat: datetime | None = NOW - timedelta(seconds=30),
    ready: bool = True,
) -> JSON:
    offered = dict(allocatable or {"cpu": "2", "memory": "8Gi", "pods": "110", KVM: "1k", TUN: "1k"})
    labels = {"kubernetes.io/hostname": name}
    if schedulable is not None:
        labels["kubevirt.io/schedulable"] = schedulable
    annotations = {"kubevirt.io/heartbeat": stamp(heartbeat)} if heartbeat is not None else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {},
        "status": {
            "allocatable": offered,
            "capacity": offered,
            "conditions": [condition("Ready", "True" if ready else "False", "KubeletReady")],
        },
    }


def handler_pod(node_name: str, namespace: str, *, ready: bool = True) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"virt-handler-{node_name}",
            "namespace": namespace,
            "labels": {"kubevirt.io": "virt-handler"},
        },
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "virt-handler", "image": "registry.local/virt-handler:v1.6"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [condition("Ready", "True" if ready else "False")],
        },
    }


def migration(name: str, namespace: str, vmi_name: str, *, phase: str, status: JSON | None = None) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceMigration",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"vmiName": vmi_name},
        "status": {"phase": phase, **(status or {})},
    }


def warning_event(
    namespace: str, kind: str, name: str, reason: str, message: str, *, suffix: str = "1"
) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{suffix}", "namespace": namespace},
        "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
        "reason": reason,
        "message": message,
        "type": "Warning",
        "firstTimestamp": stamp(NOW),
        "lastTimestamp": stamp(NOW),
        "count": 1,
    }


# Kinds whose create drops the status: it is written through the status subresource afterwards. Nodes
# keep theirs (the kubelet registers so) and VMIs have no status subresource (as in KubeVirt).
_STATUS_SUBRESOURCE = frozenset(
    {PODS.plural, VIRTUAL_MACHINES.plural, VIRTUAL_MACHINE_INSTANCE_MIGRATIONS.plural}
)


def put(api: KubeApi, resource: Resource, obj: Mapping[str, Any]) -> JSON:
    """Creates ``obj`` on a real API server with its status, as the controllers would have left it."""
    body = copy.deepcopy(dict(obj))
    namespace = (body.get("metadata") or {}).get("namespace") if resource.namespaced else None
    if resource.plural not in _STATUS_SUBRESOURCE:
        return api.create(resource, namespace, body)
    status = body.pop("status", None)
    created = api.create(resource, namespace, body)
    if status is None:
        return created
    return api.update_status(resource, namespace, {**created, "status": status})
