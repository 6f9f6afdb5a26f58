"""VMs whose claims cannot serve them get KubeVirt's statuses and events, and nothing crash-loops.

- A claim that never binds (a StorageClass nobody provides): the VM waits for the binding, then its
  launcher pod is unschedulable (``ErrorUnschedulable``, the scheduler's reason on the VMI).
- A Filesystem claim larger than the node's free space: virt-handler refuses to create ``disk.img`` with
  KubeVirt's "not enough space" error, which the VMI reports (``SyncFailed``, ``Synchronized=False``).
- The same claim once the KubeVirt CR tolerates 100 % less space and keeps 1 GiB free: ``disk.img`` is made as
  large as the room left (KubeVirt's ``ToleratedSmallPV`` event) and the VM runs.
- A ``lun`` disk on a Filesystem claim: libvirt's refusal, in KubeVirt's words.
- A ReadWriteOnce claim a running VM uses, given to a second VM (on the claim's node): QEMU's image lock
  refuses it, the second VM goes into KubeVirt's CrashLoopBackOff, the first runs on.
(A missing claim: ``test_vm_bookkeeping.py``.) The launcher pods and virt-handler are never restarted.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import install
from localcluster import migration as mig
from localcluster.handle import Cluster
from localcluster.pvc_vms import DataDisk, claim, container_disk_vm
from localcluster.vmis import wait_vmi_phase

JSON = dict[str, Any]
TIB = 1 << 40
STATUS_TIMEOUT = 180.0
SYNC_FAILED = "SyncFailed"


@pytest.fixture(scope="module")
def place(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    with cluster.vm_namespace(f"ft-claims-{os.getpid() % 10000}") as name:
        yield name


def _create(cluster: Cluster, namespace: str, *objects: JSON) -> None:
    listed = {"kind": "List", "apiVersion": "v1", "items": list(objects)}
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(listed))


def _printable(cluster: Cluster, namespace: str, vm: str) -> str:
    return str(((cluster.find("vm", vm, namespace) or {}).get("status") or {}).get("printableStatus"))


def _condition(cluster: Cluster, namespace: str, vmi: str, kind: str) -> JSON:
    found = cluster.find("vmi", vmi, namespace) or {}
    conditions = (found.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), {})


def _sync_failure(cluster: Cluster, namespace: str, vmi: str, expected: str) -> str:
    """The VMI's SyncFailed event message containing ``expected``, once there."""

    def found() -> str | None:
        for reason, message in mig.events_of(cluster, namespace, vmi):
            if reason == SYNC_FAILED and expected in message:
                return message
        return None

    try:
        message: str = mig.poll(f"a {SYNC_FAILED} event of {vmi} with {expected!r}", found, STATUS_TIMEOUT)
    except AssertionError as error:
        raise AssertionError(f"{error}: {mig.events_of(cluster, namespace, vmi)}") from error
    return message


def _restarts(cluster: Cluster, namespace: str, selector: str) -> dict[str, int]:
    pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", selector)["items"]
    assert isinstance(pods, list)
    return {
        f"{p['metadata']['name']}/{c['name']}": int(c.get("restartCount", 0))
        for p in pods
        for c in p.get("status", {}).get("containerStatuses", [])
    }


@pytest.fixture(scope="module")
def handler_restarts(cluster: Cluster, kubevirt: float) -> Iterator[None]:
    """virt-handler's containers are not restarted while the module's VMs fail."""
    before = _restarts(cluster, "kubevirt", "kubevirt.io=virt-handler")
    yield
    assert _restarts(cluster, "kubevirt", "kubevirt.io=virt-handler") == before


def _no_launcher_restarts(cluster: Cluster, namespace: str) -> None:
    restarts = _restarts(cluster, namespace, "kubevirt.io=virt-launcher")
    assert restarts, "no launcher pod"
    assert set(restarts.values()) == {0}, restarts


def test_a_claim_that_never_binds_leaves_the_vm_unschedulable(
    cluster: Cluster, place: str, handler_restarts: None
) -> None:
    unbound = claim("unbound", "64Mi")
    unbound["spec"]["storageClassName"] = "nobody-provides-this"
    vm = container_disk_vm("unbound", (DataDisk("data", "unbound", "UNBOUND"),))
    _create(cluster, place, unbound, vm)
    cluster.wait_until(
        "the VM unschedulable", lambda: _printable(cluster, place, "unbound") == "ErrorUnschedulable", 120
    )
    scheduled = _condition(cluster, place, "unbound", "PodScheduled")
    assert (scheduled.get("status"), scheduled.get("reason")) == ("False", "Unschedulable")
    assert "unbound immediate PersistentVolumeClaims" in scheduled.get("message", ""), scheduled
    assert (cluster.find("pvc", "unbound", place) or {})["status"]["phase"] == "Pending"


def test_a_filesystem_claim_larger_than_the_nodes_free_space_gets_no_disk_img(
    cluster: Cluster, place: str, handler_restarts: None
) -> None:
    # The local driver's Filesystem volumes are directories on the node: their free space is the node's.
    free = os.statvfs(cluster.layout.state).f_bavail * os.statvfs(cluster.layout.state).f_frsize
    assert free < 0.9 * TIB, f"the node has {free} B free: a 1 TiB claim would fit"
    _create(
        cluster, place, claim("huge", "1Ti"), container_disk_vm("huge", (DataDisk("data", "huge", "HUGE"),))
    )
    message = _sync_failure(cluster, place, "huge", "not enough space")
    assert message.startswith("preparing host-disks failed: unable to create "), message
    assert "/var/run/kubevirt-private/vmi-disks/data/disk.img, not enough space, demanded size " in message
    assert "also after taking 10 % toleration into account" in message
    synchronized = _condition(cluster, place, "huge", "Synchronized")
    # The free space goes up and down between retries: the condition has the latest try's figures.
    assert synchronized.get("status") == "False", synchronized
    assert synchronized.get("reason") == "Synchronizing with the Domain failed.", synchronized
    assert "not enough space, demanded size" in synchronized.get("message", ""), synchronized
    assert _printable(cluster, place, "huge") == "Starting"
    _no_launcher_restarts(cluster, place)
    # Not left retrying: the next test widens the toleration, which would let this one start.
    cluster.kubectl("delete", "vm", "huge", "-n", place, "--wait=true")


def test_the_kubevirt_crs_space_toleration_and_reserve_size_disk_img(
    cluster: Cluster, place: str, handler_restarts: None
) -> None:
    reserve = 1 << 30
    with install.developer_configuration(
        cluster, pvcTolerateLessSpaceUpToPercent=100, minimumReservePVCBytes=reserve
    ):
        _create(
            cluster,
            place,
            claim("tolerated", "1Ti"),
            container_disk_vm("tolerated", (DataDisk("data", "tolerated", "TOLERATED"),)),
        )
        wait_vmi_phase(cluster, "tolerated", place, timeout=STATUS_TIMEOUT)
    tolerated = [m for r, m in mig.events_of(cluster, place, "tolerated") if r == "ToleratedSmallPV"]
    assert len(tolerated) == 1, mig.events_of(cluster, place, "tolerated")
    sizes = re.fullmatch(r"PV size too small: expected (\d+) B, found (\d+) B\. .*", tolerated[0])
    assert sizes is not None, tolerated
    expected, found = int(sizes[1]), int(sizes[2])
    assert tolerated[0] == (
        f"PV size too small: expected {expected} B, found {found} B. "
        "Using it anyway, it is within 100 % toleration"
    )
    assert expected == TIB
    # The image took the room less the CR's reserve (the node's free space has moved on a little since).
    state = os.statvfs(cluster.layout.state)
    free = state.f_bavail * state.f_frsize
    assert 0 < found < free - reserve // 2, (found, free)
    _no_launcher_restarts(cluster, place)
    cluster.kubectl("delete", "vm", "tolerated", "-n", place, "--wait=true")


def test_a_lun_disk_on_a_filesystem_claim_is_refused_by_libvirt(
    cluster: Cluster, place: str, handler_restarts: None
) -> None:
    vm = container_disk_vm("lun", (DataDisk("data", "lun-fs", "LUNFS"),))
    disks = vm["spec"]["template"]["spec"]["domain"]["devices"]["disks"]
    (data,) = [d for d in disks if d["name"] == "data"]
    data.pop("disk")
    data.pop("serial")
    data["lun"] = {}
    _create(cluster, place, claim("lun-fs", "64Mi"), vm)
    message = _sync_failure(
        cluster, place, "lun", "disk device='lun' is only valid for block type disk source"
    )
    assert message.startswith('server error. command SyncVMI failed: "LibvirtError(Code=67, Domain=20, '), (
        message
    )
    _no_launcher_restarts(cluster, place)


def test_a_readwriteonce_claim_in_use_by_a_running_vm_is_refused_to_a_second(
    cluster: Cluster, place: str, handler_restarts: None
) -> None:
    first = container_disk_vm("first", (DataDisk("data", "in-use", "INUSE"),))
    _create(cluster, place, claim("in-use", "64Mi"), first)
    running = wait_vmi_phase(cluster, "first", place, timeout=STATUS_TIMEOUT)
    second = container_disk_vm("second", (DataDisk("data", "in-use", "INUSE"),))
    _create(cluster, place, second)
    message = _sync_failure(cluster, place, "second", 'Failed to get \\"write\\" lock')
    assert message.startswith('server error. command SyncVMI failed: "LibvirtError(Code=1, Domain=10, '), (
        message
    )
    assert "/var/run/kubevirt-private/vmi-disks/data/disk.img" in message
    # As in KubeVirt, virt-handler deletes the domain QEMU could not start: the VMI fails, the VM restarts
    # it with a growing back-off.
    cluster.wait_until(
        "the second VMI's crash event",
        lambda: ("Stopped", "The VirtualMachineInstance crashed.") in mig.events_of(cluster, place, "second"),
        60,
    )
    cluster.wait_until(
        "the second VM in CrashLoopBackOff",
        lambda: _printable(cluster, place, "second") == "CrashLoopBackOff",
        STATUS_TIMEOUT,
    )
    vm = cluster.find("vm", "second", place) or {}
    assert vm["status"]["startFailure"]["consecutiveFailCount"] >= 1, vm["status"]
    again = cluster.find("vmi", "first", place) or {}
    assert (again["metadata"]["uid"], again["status"]["phase"]) == (running["metadata"]["uid"], "Running")
    _no_launcher_restarts(cluster, place)
