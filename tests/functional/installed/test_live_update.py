"""Live updates of a running VM on the two-node cluster (rollout strategy LiveUpdate, KubeVirt's
default, with the LiveMigrate workload update method, as KubeVirt's hotplug specs configure it).

One test-guest VM boots once for the module with 1 of 2 sockets and 1Gi of 2Gi guest memory. Every
second it prints on its serial console a counter, the vCPUs it has online and its MemTotal, so the
console shows what the guest sees and that it never rebooted (the counter goes on, never starting again
at 1). A socket and a gigabyte are plugged in through a live migration to a larger launcher pod each; a
change that cannot be made live sets RestartRequired until ``virtctl restart``; a node selector reaches the
running VMI, and the next migration follows it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import install
from localcluster import migration as mig
from localcluster.handle import Cluster
from localcluster.up import virtctl

JSON = dict[str, Any]
VM = "growing"
BOOT_TIMEOUT = 240.0
HOTPLUG_TIMEOUT = 300.0
GIB = 1 << 30
GROWN_KIB = (GIB >> 10) * 9 // 10  # MemTotal after 1Gi more: most of it (the kernel keeps some)


def growing_vm() -> JSON:
    vm = mig.counting_guest_vm(VM)
    spec = vm["spec"]["template"]["spec"]
    spec.update(mig.guest_vmi_spec(mig.REPORTER_USER_DATA))
    spec["evictionStrategy"] = "LiveMigrate"
    domain = spec["domain"]
    domain.pop("resources")  # requests follow the guest memory, as KubeVirt sizes them
    domain["cpu"] = {"sockets": 1, "cores": 1, "threads": 1, "maxSockets": 2}
    domain["memory"] = {"guest": "1Gi", "maxGuest": "2Gi"}
    return vm


@pytest.fixture(scope="module")
def place(two_node_cluster: Cluster, nodes: tuple[str, str]) -> Iterator[str]:
    namespace = f"ft-live-update-{os.getpid() % 100000}"
    two_node_cluster.fresh_namespace(namespace)
    with install.spec_fields(
        two_node_cluster, workloadUpdateStrategy={"workloadUpdateMethods": ["LiveMigrate"]}
    ):
        yield namespace
        two_node_cluster.kubectl("delete", "vm", VM, "-n", namespace, "--timeout=120s", check=False)
    two_node_cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def current_pod(cluster: Cluster, namespace: str) -> tuple[JSON, str]:
    vmi = mig.wait_running(cluster, namespace, VM, BOOT_TIMEOUT)
    pod = mig.pod_on(cluster, namespace, vmi["metadata"]["uid"], vmi["status"]["nodeName"])
    return vmi, str(pod["metadata"]["name"])


def compute_requests(cluster: Cluster, namespace: str, pod: str) -> JSON:
    found = cluster.find("pod", pod, namespace)
    assert found is not None
    (compute,) = [c for c in found["spec"]["containers"] if c["name"] == "compute"]
    return dict(compute["resources"].get("requests") or {})


def condition(obj: JSON, kind: str) -> JSON | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def patch_vm(cluster: Cluster, namespace: str, ops: list[JSON]) -> None:
    cluster.kubectl("patch", "vm", VM, "-n", namespace, "--type=json", "-p", json.dumps(ops))


def hotplug(cluster: Cluster, namespace: str, ops: list[JSON], condition_type: str) -> JSON:
    """Applies ``ops`` to the running VM and follows KubeVirt's hotplug path: the VMI's condition, a workload
    update migration that succeeds, the condition gone; returns the migration."""
    known = {m["metadata"]["name"] for m in mig.migrations_of(cluster, namespace, VM)}
    patch_vm(cluster, namespace, ops)
    mig.poll(
        f"{condition_type} on the VMI",
        lambda: condition(mig.vmi(cluster, namespace, VM), condition_type),
        60.0,
        0.5,
    )
    created = mig.poll(
        "the workload update migration",
        lambda: [m for m in mig.migrations_of(cluster, namespace, VM) if m["metadata"]["name"] not in known],
        60.0,
    )
    (migration,) = created
    assert "kubevirt.io/workloadUpdateMigration" in migration["metadata"]["annotations"]
    assert migration["metadata"]["name"].startswith("kubevirt-workload-update-")
    done = mig.wait_phase(
        cluster, namespace, migration["metadata"]["name"], mig.FINAL_PHASES, HOTPLUG_TIMEOUT
    )
    assert mig.phase(done) == "Succeeded", json.dumps(done.get("status"))
    vmi = mig.vmi(cluster, namespace, VM)
    assert condition(vmi, condition_type) is None, vmi["status"]["conditions"]
    vm = cluster.find("vm", VM, namespace) or {}
    assert condition(vm, "RestartRequired") is None, vm["status"].get("conditions")
    return done


def test_a_socket_and_a_gigabyte_plugged_into_the_running_guest(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str
) -> None:
    cluster = two_node_cluster
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(growing_vm()))
    vmi, pod = current_pod(cluster, place)
    assert vmi["status"]["currentCPUTopology"] == {"sockets": 1, "cores": 1, "threads": 1}
    assert vmi["status"]["memory"]["guestAtBoot"] == "1Gi"
    first = mig.poll("the guest reporting", lambda: mig.guest_reports(cluster, place, pod), 120.0)
    assert first[-1][1] == 1, first[-1]
    boot_kib = first[-1][2]
    before = compute_requests(cluster, place, pod)

    # One more socket: a migration to a pod with twice the CPU request, then the guest brings it online.
    hotplug(
        cluster,
        place,
        [{"op": "replace", "path": "/spec/template/spec/domain/cpu/sockets", "value": 2}],
        "HotVCPUChange",
    )
    vmi, pod = current_pod(cluster, place)
    assert vmi["status"]["currentCPUTopology"]["sockets"] == 2
    after = compute_requests(cluster, place, pod)
    assert _millicores(after["cpu"]) == 2 * _millicores(before["cpu"]), (before, after)
    seen = mig.poll(
        "the guest with 2 vCPUs online",
        lambda: [r for r in mig.guest_reports(cluster, place, pod) if r[1] == 2],
        60.0,
    )
    assert seen[0][0] > first[-1][0], "the guest rebooted"

    # One more gigabyte: virtio-mem in a pod sized for 2Gi, the guest's MemTotal grows by about that much.
    hotplug(
        cluster,
        place,
        [{"op": "replace", "path": "/spec/template/spec/domain/memory/guest", "value": "2Gi"}],
        "HotMemoryChange",
    )
    vmi, pod = current_pod(cluster, place)
    assert vmi["spec"]["domain"]["memory"]["guest"] == "2Gi"
    assert vmi["status"]["memory"]["guestRequested"] == "2Gi"
    mig.poll(
        "status.memory.guestCurrent at 2Gi",
        lambda: mig.vmi(cluster, place, VM)["status"]["memory"].get("guestCurrent") == "2Gi",
        60.0,
    )
    grown = mig.poll(
        "the guest's MemTotal grown by 1Gi",
        lambda: [r for r in mig.guest_reports(cluster, place, pod) if r[2] - boot_kib >= GROWN_KIB],
        60.0,
    )
    assert grown[0][0] > seen[-1][0], "the guest rebooted"
    assert grown[-1][1] == 2

    # Cores cannot change live: RestartRequired, until virtctl restart boots the guest with them.
    patch_vm(cluster, place, [{"op": "replace", "path": "/spec/template/spec/domain/cpu/cores", "value": 2}])
    mig.poll(
        "RestartRequired on the VM",
        lambda: condition(cluster.find("vm", VM, place) or {}, "RestartRequired"),
        60.0,
    )
    old_uid = vmi["metadata"]["uid"]
    restarted = virtctl(cluster, "restart", VM, "-n", place)
    assert restarted.returncode == 0, restarted.stderr
    mig.poll(
        "a new VMI",
        lambda: (
            (cluster.find("vmi", VM, place) or {"metadata": {}})["metadata"].get("uid") not in (None, old_uid)
        ),
        120.0,
    )
    vmi, pod = current_pod(cluster, place)
    assert vmi["status"]["currentCPUTopology"] == {"sockets": 2, "cores": 2, "threads": 1}
    assert vmi["status"]["memory"]["guestAtBoot"] == "2Gi"
    # A fresh boot with 4 vCPUs and 2Gi under TCG on the two host cores: slower than the first one.
    mig.poll(
        "the restarted guest with 4 vCPUs",
        lambda: [r for r in mig.guest_reports(cluster, place, pod) if r[1] == 4],
        BOOT_TIMEOUT,
    )
    mig.poll(
        "RestartRequired gone",
        lambda: condition(cluster.find("vm", VM, place) or {}, "RestartRequired") is None,
        60.0,
    )


def test_a_node_selector_reaches_the_running_vmi_and_the_next_migration_follows_it(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str
) -> None:
    cluster = two_node_cluster
    if cluster.find("vm", VM, place) is None:
        cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(growing_vm()))
    vmi, _ = current_pod(cluster, place)
    here = vmi["status"]["nodeName"]
    other = nodes[1] if here == nodes[0] else nodes[0]
    selector = {"kubernetes.io/hostname": other}
    patch_vm(cluster, place, [{"op": "add", "path": "/spec/template/spec/nodeSelector", "value": selector}])
    mig.poll(
        "the node selector on the VMI",
        lambda: mig.vmi(cluster, place, VM)["spec"].get("nodeSelector") == selector,
        60.0,
    )
    vm = cluster.find("vm", VM, place) or {}
    assert condition(vm, "RestartRequired") is None, vm["status"].get("conditions")
    assert mig.vmi(cluster, place, VM)["status"]["nodeName"] == here  # KubeVirt moves nothing by itself

    started = virtctl(cluster, "migrate", VM, "-n", place)
    assert started.returncode == 0, started.stderr
    migration = mig.migrations_of(cluster, place, VM)[-1]
    done = mig.wait_phase(cluster, place, migration["metadata"]["name"], mig.FINAL_PHASES, HOTPLUG_TIMEOUT)
    assert mig.phase(done) == "Succeeded", json.dumps(done.get("status"))
    assert mig.vmi(cluster, place, VM)["status"]["nodeName"] == other

    patch_vm(cluster, place, [{"op": "remove", "path": "/spec/template/spec/nodeSelector"}])
    mig.poll(
        "the node selector gone from the VMI",
        lambda: not mig.vmi(cluster, place, VM)["spec"].get("nodeSelector"),
        60.0,
    )


def _millicores(value: str) -> int:
    return int(value[:-1]) if value.endswith("m") else int(float(value) * 1000)
