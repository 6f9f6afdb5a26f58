"""Live migration on the two-node cluster (issue 16): one test-guest VM (containerDisk, masquerade on the
pod network, ``evictionStrategy: LiveMigrate``) boots once for the module and moves between the nodes.

Each test starts from wherever the guest is and names the other node the target, so each also passes
alone. The guest counts on its serial console (``tick N`` about every 10 ms) and prints its address;
a migration must leave the counter going on from where it was (no reboot) and the address unchanged.
Faults are provoked cheaply: a MigrationPolicy throttling the VM's migrations to 1 MiB/s keeps one
running long enough to cancel it or to kill the target's virt-handler under it, the same policy with
``completionTimeoutPerGiB: 1`` lets the source give up, and an ``addedNodeSelector`` no node has keeps
the target pod from ever starting.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import install
from localcluster import migration as mig
from localcluster.handle import Cluster
from localcluster.metrics import scrape_component
from localcluster.up import virtctl

JSON = dict[str, Any]
VM = "mover"
BOOT_TIMEOUT = 180.0
MIGRATION_TIMEOUT = 180.0
THROTTLED = "1Mi"  # 128 MiB of guest memory at 1 MiB/s: minutes, far longer than any test needs


@pytest.fixture(scope="module")
def place(two_node_cluster: Cluster, nodes: tuple[str, str]) -> Iterator[str]:
    namespace = f"ft-migration-{os.getpid() % 100000}"
    two_node_cluster.fresh_namespace(namespace)
    yield namespace
    two_node_cluster.kubectl("delete", "vm", VM, "-n", namespace, "--timeout=120s", check=False)
    two_node_cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


@pytest.fixture(scope="module")
def guest(two_node_cluster: Cluster, place: str) -> JSON:
    """The VM's VMI, Running and LiveMigratable, its counter going."""
    cluster = two_node_cluster
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(mig.counting_guest_vm(VM)))
    vmi = mig.wait_running(cluster, place, VM, BOOT_TIMEOUT)
    pod = mig.pod_on(cluster, place, vmi["metadata"]["uid"], vmi["status"]["nodeName"])
    mig.poll("the guest counting", lambda: mig.console_ticks(cluster, place, pod["metadata"]["name"]), 120.0)
    return vmi


@pytest.fixture
def policy(two_node_cluster: Cluster, place: str) -> Iterator[Any]:
    """Creates MigrationPolicies for this VM's namespace (deleted after the test)."""
    created: list[str] = []

    def make(**spec: Any) -> str:
        name = f"ft-migration-{os.getpid() % 100000}-{len(created)}"
        body = {
            "apiVersion": "migrations.kubevirt.io/v1alpha1",
            "kind": "MigrationPolicy",
            "metadata": {"name": name},
            "spec": {
                "selectors": {
                    "namespaceSelector": {"kubernetes.io/metadata.name": place},
                    "virtualMachineInstanceSelector": {"kubevirt.io/vm": VM},
                },
                **spec,
            },
        }
        two_node_cluster.kubectl("create", "-f", "-", stdin=json.dumps(body))
        created.append(name)
        return name

    yield make
    for name in created:
        two_node_cluster.kubectl("delete", "migrationpolicy", name, "--ignore-not-found", check=False)


class Where:
    """Where the guest is now: node, launcher pod, last tick, and the node a migration would go to."""

    def __init__(self, cluster: Cluster, namespace: str, nodes: tuple[str, str]) -> None:
        self.vmi = mig.wait_running(cluster, namespace, VM, BOOT_TIMEOUT)
        self.node = str(self.vmi["status"]["nodeName"])
        self.other = nodes[1] if self.node == nodes[0] else nodes[0]
        self.uid = str(self.vmi["metadata"]["uid"])
        self.pod = str(mig.pod_on(cluster, namespace, self.uid, self.node)["metadata"]["name"])
        self.tick = max(mig.console_ticks(cluster, namespace, self.pod) or [0])


def assert_still_on_source(cluster: Cluster, namespace: str, before: Where) -> None:
    """A failed migration left the guest running where it was, counting, with no target pod left."""
    vmi = mig.vmi(cluster, namespace, VM)
    assert vmi["status"]["phase"] == "Running"
    assert vmi["status"]["nodeName"] == before.node
    assert vmi["metadata"]["labels"]["kubevirt.io/nodeName"] == before.node
    # The target's virt-handler lets the VMI go once it sees the failure (a killed one once it is back).
    mig.poll(
        "the migration target's label gone",
        lambda: (
            "kubevirt.io/migrationTargetNodeName" not in mig.vmi(cluster, namespace, VM)["metadata"]["labels"]
        ),
        180.0,
    )
    mig.poll(
        "the guest counting on after the failed migration",
        lambda: max(mig.console_ticks(cluster, namespace, before.pod) or [0]) > before.tick + 50,
        60.0,
    )

    def target_pods_gone() -> bool:
        # Every launcher pod of the VMI but the source's is gone or has finished.
        return all(
            p["metadata"]["name"] == before.pod or p["status"].get("phase") in ("Succeeded", "Failed")
            for p in mig.launcher_pods(cluster, namespace, before.uid)
        )

    mig.poll("the failed migration's target pod gone", target_pods_gone, 120.0)


def test_virtctl_migrate_moves_the_counting_guest_to_the_other_node(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str, guest: JSON
) -> None:
    cluster = two_node_cluster
    before = Where(cluster, place, nodes)
    addresses = mig.console_addresses(cluster, place, before.pod)
    assert addresses, "the guest printed no address"
    known = {m["metadata"]["name"] for m in mig.migrations_of(cluster, place, VM)}

    started = virtctl(cluster, "migrate", VM, "-n", place)
    assert started.returncode == 0, started.stderr
    assert f"VM {VM} was scheduled to migrate" in started.stdout
    [created] = [m for m in mig.migrations_of(cluster, place, VM) if m["metadata"]["name"] not in known]
    name = created["metadata"]["name"]
    assert name.startswith("kubevirt-migrate-vm-")
    assert created["metadata"]["labels"]["kubevirt.io/vmi-name"] == VM
    done = mig.wait_phase(cluster, place, name, mig.FINAL_PHASES, MIGRATION_TIMEOUT)
    assert mig.phase(done) == "Succeeded", json.dumps(done.get("status"))

    # KubeVirt's phases in order, and the final migrationState copied onto the VMIM.
    seen = [p["phase"] for p in done["status"]["phaseTransitionTimestamps"]]
    assert seen == [
        "Pending",
        "Scheduling",
        "Scheduled",
        "PreparingTarget",
        "TargetReady",
        "Running",
        "Succeeded",
    ]
    state = done["status"]["migrationState"]
    assert (state["sourceNode"], state["targetNode"]) == (before.node, before.other)
    succeeded = scrape_component(cluster, "virt-controller").values(
        "kubevirt_vmi_migration_succeeded", namespace=place, vmi=VM, vmim=name
    )
    assert succeeded == [1.0]
    assert state["completed"] is True
    assert not state.get("failed")

    # Ownership moved: status.nodeName, the node label, the Migrated event.
    vmi = mig.vmi(cluster, place, VM)
    assert vmi["status"]["phase"] == "Running"
    assert vmi["status"]["nodeName"] == before.other
    assert vmi["metadata"]["labels"]["kubevirt.io/nodeName"] == before.other
    assert "kubevirt.io/migrationTargetNodeName" not in vmi["metadata"]["labels"]
    mig.poll(
        "the Migrated event",
        lambda: (
            ("Migrated", f"The VirtualMachineInstance migrated to node {before.other}.")
            in mig.events_of(cluster, place, VM)
        ),
        30.0,
    )

    # The guest carries on on the target: the counter goes on from where it was, the address is the same.
    target = mig.pod_on(cluster, place, before.uid, before.other)["metadata"]["name"]
    ticks = mig.poll("the counter on the target", lambda: mig.console_ticks(cluster, place, target), 60.0)
    assert ticks[0] > before.tick, (before.tick, ticks[:5])
    assert 1 not in ticks, "the guest rebooted"
    on_source = mig.console_ticks(cluster, place, before.pod)  # while the finished pod keeps its logs
    if on_source:
        # Where the source's console stopped, the target's goes on (a UART's few bytes may repeat).
        assert max(on_source) - 5 <= ticks[0] <= max(on_source) + 100, (max(on_source), ticks[:5])
    mig.poll(
        "the counter going on",
        lambda: max(mig.console_ticks(cluster, place, target)) > ticks[0] + 200,
        60.0,
    )
    moved_addresses = mig.poll(
        "the address printed on the target", lambda: mig.console_addresses(cluster, place, target), 60.0
    )
    assert moved_addresses == addresses

    # The guest serves HTTP through the target pod; the source pod is gone or finished.
    target_pod = mig.pod_on(cluster, place, before.uid, before.other)
    url = f"http://{target_pod['status']['podIP']}:80/"
    body = mig.poll(
        f"{url} answering",
        lambda: _fetch(url),
        60.0,
    )
    assert "<html>" in body

    def source_finished() -> bool:
        found = cluster.find("pod", before.pod, place)
        return found is None or found["status"].get("phase") in ("Succeeded", "Failed")

    mig.poll("the source launcher pod finished", source_finished, 90.0)


def _fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode(errors="replace"))
    except OSError:
        return ""


def test_migrate_cancel_mid_way_leaves_the_guest_where_it_was(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str, guest: JSON, policy: Any
) -> None:
    cluster = two_node_cluster
    policy_name = policy(bandwidthPerMigration=THROTTLED)
    before = Where(cluster, place, nodes)
    name = mig.create_migration(cluster, place, VM)
    mig.wait_phase(cluster, place, name, ("Running", *mig.FINAL_PHASES), MIGRATION_TIMEOUT)
    state = mig.vmi(cluster, place, VM)["status"]["migrationState"]
    assert state["migrationPolicyName"] == policy_name
    assert state["migrationConfiguration"]["bandwidthPerMigration"] == THROTTLED
    # While it runs, the source virt-handler reports its progress and virt-controller counts it.
    mine = {"namespace": place, "name": VM}

    def progress() -> list[float]:
        scraped = scrape_component(cluster, "virt-handler", before.node)
        return scraped.values("kubevirt_vmi_migration_data_processed_bytes", **mine)

    assert max(mig.poll("the migration's progress in virt-handler's metrics", progress, 60.0)) > 0
    controller = scrape_component(cluster, "virt-controller")
    assert sum(controller.values("kubevirt_vmi_migrations_in_running_phase")) == 1

    cancelled = virtctl(cluster, "migrate-cancel", VM, "-n", place)
    assert cancelled.returncode == 0, cancelled.stderr

    def aborted() -> JSON | None:
        found = mig.vmi(cluster, place, VM)["status"].get("migrationState") or {}
        return found if found.get("abortStatus") == "Succeeded" and found.get("failed") else None

    state = mig.poll("the source aborting the migration", aborted, 120.0)
    assert state["abortRequested"] is True
    # The VMIM was deleted by migrate-cancel: its finalizer let it go once it had failed.
    mig.poll("the cancelled VMIM gone", lambda: cluster.find("vmim", name, place) is None, 60.0)
    assert_still_on_source(cluster, place, before)


def test_a_migration_past_its_completion_timeout_fails_and_the_guest_stays(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str, guest: JSON, policy: Any
) -> None:
    cluster = two_node_cluster
    policy(bandwidthPerMigration=THROTTLED, completionTimeoutPerGiB=1)
    before = Where(cluster, place, nodes)
    name = mig.create_migration(cluster, place, VM)
    done = mig.wait_phase(cluster, place, name, mig.FINAL_PHASES, MIGRATION_TIMEOUT)
    assert mig.phase(done) == "Failed"
    state = mig.vmi(cluster, place, VM)["status"]["migrationState"]
    assert state["migrationUid"] == done["metadata"]["uid"]
    assert state["failed"] is True
    assert state["failureReason"]
    assert "FailedMigration" in [reason for reason, _ in mig.events_of(cluster, place, name)]
    assert_still_on_source(cluster, place, before)


def test_a_target_pod_that_never_starts_fails_the_migration(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str, guest: JSON
) -> None:
    cluster = two_node_cluster
    before = Where(cluster, place, nodes)
    body = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceMigration",
        "metadata": {
            "generateName": "nowhere-",
            "annotations": {"kubevirt.io/migrationUnschedulablePodTimeoutSeconds": "10"},
        },
        "spec": {"vmiName": VM, "addedNodeSelector": {"ft-migration/no-such-node": "true"}},
    }
    created = cluster.kubectl("create", "-n", place, "-o", "name", "-f", "-", stdin=json.dumps(body))
    name = created.stdout.strip().rsplit("/", 1)[-1]
    done = mig.wait_phase(cluster, place, name, mig.FINAL_PHASES, 120.0)
    assert mig.phase(done) == "Failed"
    reasons = [reason for reason, _ in mig.events_of(cluster, place, name)]
    assert "migrationTargetPodUnschedulable" in reasons
    assert "FailedMigration" in reasons
    assert_still_on_source(cluster, place, before)


def test_kubectl_drain_moves_the_live_migrate_vm_off_its_node(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str, guest: JSON
) -> None:
    cluster = two_node_cluster
    before = Where(cluster, place, nodes)
    try:
        drained = cluster.kubectl(
            "drain", before.node, "--pod-selector=kubevirt.io=virt-launcher", "--delete-emptydir-data",
            "--ignore-daemonsets", "--timeout=240s", check=False, timeout=260.0,
        )  # fmt: skip
        migrations = [(m["metadata"]["name"], m.get("status")) for m in mig.migrations_of(cluster, place, VM)]
        assert drained.returncode == 0, (drained.stderr, migrations, mig.events_of(cluster, place, VM))
    finally:
        cluster.kubectl("uncordon", before.node, check=False)
    evacuations = [
        m
        for m in mig.migrations_of(cluster, place, VM)
        if m["metadata"].get("annotations", {}).get("kubevirt.io/evacuationMigration") == before.node
    ]
    assert evacuations, "no evacuation migration was created"
    assert evacuations[-1]["metadata"]["generateName"] == "kubevirt-evacuation-"
    done = mig.wait_phase(cluster, place, evacuations[-1]["metadata"]["name"], mig.FINAL_PHASES, 60.0)
    assert mig.phase(done) == "Succeeded"
    vmi = mig.vmi(cluster, place, VM)
    assert vmi["status"]["nodeName"] == before.other
    assert not vmi["status"].get("evacuationNodeName")
    target = mig.pod_on(cluster, place, before.uid, before.other)["metadata"]["name"]
    mig.poll(
        "the counter going on after the drain",
        lambda: min(mig.console_ticks(cluster, place, target) or [0]) > before.tick,
        60.0,
    )


def test_killing_the_target_virt_handler_mid_migration_leaves_the_guest_on_the_source(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str, guest: JSON, policy: Any
) -> None:
    cluster = two_node_cluster
    policy(bandwidthPerMigration=THROTTLED)
    before = Where(cluster, place, nodes)
    name = mig.create_migration(cluster, place, VM)
    mig.wait_phase(cluster, place, name, ("Running", *mig.FINAL_PHASES), MIGRATION_TIMEOUT)
    handlers = cluster.kubectl_json(
        "get", "pods", "-n", install.NAMESPACE, "-l", f"kubevirt.io={install.HANDLER}",
        "--field-selector", f"spec.nodeName={before.other}",
    )  # fmt: skip
    items = handlers["items"]
    assert isinstance(items, list)
    [handler] = items
    cluster.kubectl(
        "delete", "pod", "-n", install.NAMESPACE, handler["metadata"]["name"], "--grace-period=0", "--force"
    )
    done = mig.wait_phase(cluster, place, name, mig.FINAL_PHASES, MIGRATION_TIMEOUT)
    assert mig.phase(done) == "Failed"
    assert_still_on_source(cluster, place, before)
    # The DaemonSet brings the handler back; the node is schedulable again for the tests after this.
    mig.poll(
        "virt-handler back on the target node",
        lambda: before.other in mig.schedulable_nodes(cluster),
        180.0,
        2.0,
    )
