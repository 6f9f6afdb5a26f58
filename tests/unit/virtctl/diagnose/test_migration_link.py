"""The migration link: a target pod with nowhere to go, a failed or finished migration, or none."""

from __future__ import annotations

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCE_MIGRATIONS
from kubevirt.virtctl.diagnose import Status
from kubevirt_testing import vm_chain as chain
from kubevirt_testing.fake_kube_api import FakeKubeApi

from .harness import NAME, NS, WithLauncherState, broken, by_name, launcher_state, scene, walk


def _add_migration(api: FakeKubeApi, phase: str, status: dict[str, object] | None = None) -> str:
    created = api.add(
        VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, chain.migration("mig1", NS, NAME, phase=phase, status=status)
    )
    return str(created["metadata"]["uid"])


def test_no_migration_is_skipped_and_the_chain_is_healthy() -> None:
    links = walk(WithLauncherState(scene(), launcher_state()))
    assert [(link.name, link.status) for link in links] == [
        ("vm", Status.OK),
        ("vmi", Status.OK),
        ("scheduling", Status.OK),
        ("containers", Status.OK),
        ("node", Status.OK),
        ("launcher", Status.OK),
        ("migration", Status.SKIPPED),
    ]


def test_a_target_pod_with_no_second_node_is_named() -> None:
    api = scene()
    uid = _add_migration(api, "Scheduling")
    vmi_uid = api.objects_of(PODS)[-1]["metadata"]["labels"]["kubevirt.io/created-by"]
    target = chain.launcher_pod(
        NAME,
        NS,
        vmi_uid,
        node=None,
        phase="Pending",
        labels={"kubevirt.io/migrationJobUID": uid},
        name="virt-launcher-vm1-target",
        conditions=[
            chain.condition(
                "PodScheduled",
                "False",
                "Unschedulable",
                "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.",
            )
        ],
    )
    api.add(PODS, target)
    link = broken(walk(api))
    assert link.name == "migration"
    assert link.message == (
        "The migration target pod virt-launcher-vm1-target can never be scheduled: "
        "there is no node it may run on other than node-a."
    )
    assert link.evidence["phase"] == "Scheduling"
    assert link.evidence["targetPod"] == "virt-launcher-vm1-target"


def test_a_failed_migration_names_the_failure_reason() -> None:
    api = scene()
    _add_migration(
        api, "Failed", {"migrationState": {"failed": True, "failureReason": "target pod vanished"}}
    )
    link = broken(walk(api))
    assert link.message == "Migration mig1 failed: target pod vanished."


def test_a_running_migration_reads_the_vmi_migration_state() -> None:
    _running_migration_reads_the_vmi_migration_state(attachment_pod=False)


def test_the_targets_hotplug_attachment_pod_is_not_taken_for_the_target() -> None:
    _running_migration_reads_the_vmi_migration_state(attachment_pod=True)


def _running_migration_reads_the_vmi_migration_state(*, attachment_pod: bool) -> None:
    api = scene()
    uid = _add_migration(api, "Running")
    vmi_key = next(key for key in api.objects if key[0] == "virtualmachineinstances")
    api.objects[vmi_key]["status"]["migrationState"] = {
        "migrationUid": uid,
        "sourceNode": "node-a",
        "targetNode": "node-b",
    }
    vmi_uid = api.objects[vmi_key]["metadata"]["uid"]
    target = chain.launcher_pod(
        NAME,
        NS,
        vmi_uid,
        node="node-b",
        labels={"kubevirt.io/migrationJobUID": uid},
        name="virt-launcher-vm1-t",
    )
    api.add(PODS, target)
    if attachment_pod:  # newer than the target, with the same job label
        attachment = chain.launcher_pod(NAME, NS, vmi_uid, node="node-b", name="hp-volume-abcde")
        attachment["metadata"]["labels"] = {"kubevirt.io": "hotplug-disk", "kubevirt.io/migrationJobUID": uid}
        api.add(PODS, attachment)
        api.objects[(PODS.plural, NS, "hp-volume-abcde")]["metadata"]["creationTimestamp"] = (
            "2999-01-01T00:00:00Z"
        )
    link = by_name(walk(api))["migration"]
    assert link.evidence["targetPod"] == "virt-launcher-vm1-t"
    assert link.status is Status.BROKEN  # node-b has neither a Node object nor a virt-handler here
    assert link.message == "Migration target: Node node-b does not exist any more."
    assert link.evidence["migrationState"]["targetNode"] == "node-b"


def test_a_succeeded_migration_is_fine() -> None:
    api = scene()
    _add_migration(api, "Succeeded", {"migrationState": {"completed": True, "targetNode": "node-a"}})
    link = by_name(walk(api))["migration"]
    assert (link.status, link.message) == (Status.OK, "Migration mig1 succeeded onto node node-a.")
