"""Volume hotplug on the local cluster as scripts and tests drive it: virtctl while virt-api takes up a
feature gate just turned on, a VMI's volume status, waiting for a volume to be Ready, and the attachment
pods (``hp-volume-*``) that hold hotplugged claims on a node."""

from __future__ import annotations

import time
from typing import Any

from .handle import Cluster
from .up import virtctl

JSON = dict[str, Any]
ATTACHMENT_LABEL = "kubevirt.io=hotplug-disk"
GATE_PROPAGATION = 60.0


def virtctl_with_gate(cluster: Cluster, *args: str, timeout: float = GATE_PROPAGATION) -> str:
    """virtctl's output; retried while virt-api answers that a feature gate is off (it takes up a change of
    the KubeVirt CR within seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        result = virtctl(cluster, *args)
        if result.returncode == 0:
            return result.stdout
        if "feature gate" not in result.stderr or time.monotonic() > deadline:
            raise AssertionError(
                f"virtctl {' '.join(args)}: {result.returncode} {result.stdout}{result.stderr}"
            )
        time.sleep(2)


def volume_status(cluster: Cluster, namespace: str, vmi: str, volume: str) -> JSON | None:
    found = cluster.find("vmi", vmi, namespace) or {}
    statuses = (found.get("status") or {}).get("volumeStatus") or []
    return next((s for s in statuses if s.get("name") == volume), None)


def wait_volume_ready(
    cluster: Cluster, namespace: str, vmi: str, volume: str, timeout: float = 180.0, **expected: str
) -> JSON:
    """The volume's status once its phase is Ready (and its ``hotplugVolume`` has the ``expected``
    values, e.g. ``attachPodName``); on timeout, the failure names the last status, the pods and
    virt-handler's log."""
    deadline = time.monotonic() + timeout
    while True:
        status = volume_status(cluster, namespace, vmi, volume)
        if status is not None and status.get("phase") == "Ready":
            hotplug = status.get("hotplugVolume") or {}
            if all(hotplug.get(key) == value for key, value in expected.items()):
                return status
        if time.monotonic() > deadline:
            pods = cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False).stdout
            handler = cluster.kubectl(
                "logs", "-n", "kubevirt", "-l", "kubevirt.io=virt-handler", "--tail=30", check=False
            ).stdout
            raise AssertionError(
                f"volume {volume} of {namespace}/{vmi} not Ready{expected or ''} in {timeout:.0f} s: "
                f"{status}\n{pods}\n{handler[-4000:]}"
            )
        time.sleep(1)


def attachment_pods(cluster: Cluster, namespace: str) -> list[JSON]:
    """The namespace's hotplug attachment pods not being deleted."""
    listed = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", ATTACHMENT_LABEL)
    items: list[JSON] = listed["items"]  # type: ignore[assignment]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]
