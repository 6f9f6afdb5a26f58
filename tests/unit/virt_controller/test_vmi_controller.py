"""The VMI controller against the in-memory API: launcher pod, phases, writes, deletion, finalizers."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES, ConflictError, InvalidError, NotFoundError
from kubevirt.virt_config import ClusterConfig, LauncherSettings
from kubevirt.virt_controller.watch.pods import pod_name
from kubevirt.virt_controller.watch.vmi import _status_patch as vmi_controller_status_patch
from kubevirt_api.core.v1 import VirtualMachineInstance

from .fakes import JSON, Cluster
from .harness import (
    LAUNCHER_IMAGE,
    NAMESPACE,
    Controllers,
    bind_pod,
    schedule_pod,
    set_vmi_phase,
    start_pod,
    vmi_manifest,
)


def _start(cluster: Cluster, name: str = "testvmi") -> Controllers:
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, vmi_manifest(name))
    controllers.run(only=("vmi",))
    return controllers


def _vmi(cluster: Cluster, name: str = "testvmi") -> JSON:
    return cluster.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, name)


def _pods(cluster: Cluster) -> list[JSON]:
    return cluster.api.find(PODS, NAMESPACE)


def test_a_new_vmi_gets_one_launcher_pod_and_goes_scheduling() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    pods = _pods(cluster)
    assert len(pods) == 1
    assert pod_name(pods[0]).startswith("virt-launcher-testvmi-")
    vmi = _vmi(cluster)
    assert vmi["status"]["phase"] == "Scheduling"
    assert vmi["status"]["activePods"] == {pods[0]["metadata"]["uid"]: ""}
    ready = next(c for c in vmi["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "GuestNotRunning")
    assert vmi["metadata"]["annotations"]["kubevirt.io/latest-observed-api-version"] == "v1"
    assert [t["phase"] for t in vmi["status"]["phaseTransitionTimestamps"]] == ["Scheduling"]
    assert "SuccessfulCreate" in controllers.events.reasons()


def test_reaching_scheduled_takes_one_pod_create_and_two_vmi_writes() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    cluster.api.writes.clear()
    pod = _pods(cluster)[0]
    schedule_pod(cluster, pod_name(pod), node="node01")
    controllers.run(only=("vmi",))
    vmi = _vmi(cluster)
    assert vmi["status"]["phase"] == "Scheduled"
    assert vmi["status"]["nodeName"] == "node01"
    assert vmi["metadata"]["labels"]["kubevirt.io/nodeName"] == "node01"
    assert vmi["status"]["migrationTransport"] == "Unix"
    assert vmi["status"]["qosClass"] == "Burstable"
    assert vmi["status"]["launcherContainerImageVersion"] == LAUNCHER_IMAGE

    # Count from scratch: a fresh VMI, with the pod bound and started in between.
    cluster2 = Cluster()
    controllers2 = Controllers(cluster2)
    cluster2.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, vmi_manifest("counted"))
    cluster2.api.writes.clear()
    controllers2.run(only=("vmi",))
    launcher = pod_name(_pods(cluster2)[0])
    bind_pod(cluster2, launcher)
    controllers2.run(only=("vmi",))
    start_pod(cluster2, launcher)
    controllers2.run(only=("vmi",))
    assert _vmi(cluster2, "counted")["status"]["phase"] == "Scheduled"
    vmi_writes = [w for w in cluster2.api.writes if w[1] == "virtualmachineinstances"]
    pod_creates = [w for w in cluster2.api.writes if w == ("create", "pods", None)]
    assert len(pod_creates) == 1
    # Scheduling, then Scheduled: the pod's node alone is no write, it rides with Scheduled.
    assert vmi_writes == [("update", "virtualmachineinstances", None)] * 2, vmi_writes
    assert _vmi(cluster2, "counted")["status"]["activePods"] == {
        _pods(cluster2)[0]["metadata"]["uid"]: "node01"
    }


def test_a_failed_pod_fails_the_scheduling_vmi() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    pod = _pods(cluster)[0]

    def fail(obj: JSON) -> None:
        obj["status"] = {
            "phase": "Failed",
            "containerStatuses": [{"name": "compute", "state": {"terminated": {}}}],
        }

    cluster.api.edit(PODS, NAMESPACE, pod_name(pod), fail)
    controllers.run(only=("vmi",))
    assert _vmi(cluster)["status"]["phase"] == "Failed"


def test_a_vanished_pod_fails_the_vmi() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    cluster.api.remove(PODS, NAMESPACE, pod_name(_pods(cluster)[0]))
    controllers.run(only=("vmi",))
    assert _vmi(cluster)["status"]["phase"] == "Failed"


def test_an_unschedulable_pod_is_mirrored_as_pod_scheduled_false() -> None:
    cluster = Cluster()
    controllers = _start(cluster)

    def unschedulable(obj: JSON) -> None:
        obj["status"] = {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"}
            ],
        }

    cluster.api.edit(PODS, NAMESPACE, pod_name(_pods(cluster)[0]), unschedulable)
    controllers.run(only=("vmi",))
    conditions = {c["type"]: c for c in _vmi(cluster)["status"]["conditions"]}
    assert conditions["PodScheduled"]["reason"] == "Unschedulable"
    assert _vmi(cluster)["status"]["phase"] == "Scheduling"


def test_an_image_pull_error_is_reported_as_synchronized_false() -> None:
    cluster = Cluster()
    controllers = _start(cluster)

    def image_error(obj: JSON) -> None:
        obj["status"] = {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "name": "compute",
                    "state": {"waiting": {"reason": "ErrImagePull", "message": "no such image"}},
                }
            ],
        }

    cluster.api.edit(PODS, NAMESPACE, pod_name(_pods(cluster)[0]), image_error)
    controllers.run(only=("vmi",))
    conditions = {c["type"]: c for c in _vmi(cluster)["status"]["conditions"]}
    assert (conditions["Synchronized"]["reason"], conditions["Synchronized"]["message"]) == (
        "ErrImagePull",
        "no such image",
    )


def test_deleting_the_vmi_deletes_its_pod_and_then_drops_the_finalizer() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    cluster.api.delete(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvmi")
    controllers.run(only=("vmi",))
    assert _pods(cluster) == []
    assert "SuccessfulDelete" in controllers.events.reasons()
    # The VMI failed without a pod; with no pod left its finalizer goes and the object with it.
    assert cluster.api.find(VIRTUAL_MACHINE_INSTANCES) == []


def test_a_finished_vmi_loses_its_pod_and_its_finalizer() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    schedule_pod(cluster, pod_name(_pods(cluster)[0]))
    controllers.run(only=("vmi",))
    set_vmi_phase(cluster, "testvmi", "Running")
    controllers.run(only=("vmi",))
    set_vmi_phase(cluster, "testvmi", "Succeeded")
    controllers.run(only=("vmi",))
    assert _pods(cluster) == []
    vmi = _vmi(cluster)
    assert "foregroundDeleteVirtualMachine" not in (vmi["metadata"].get("finalizers") or [])
    assert "launcherContainerImageVersion" not in vmi["status"]


def test_a_running_vmi_is_patched_not_updated() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    schedule_pod(cluster, pod_name(_pods(cluster)[0]))
    controllers.run(only=("vmi",))
    set_vmi_phase(cluster, "testvmi", "Running")
    cluster.api.writes.clear()
    controllers.run(only=("vmi",))
    vmi_writes = [w for w in cluster.api.writes if w[1] == "virtualmachineinstances"]
    assert vmi_writes
    assert {verb for verb, _, _ in vmi_writes} == {"patch"}
    ready = next(c for c in _vmi(cluster)["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"  # copied from the pod once the guest runs


def test_ready_is_written_beside_conditions_virt_handler_wrote_with_null_times() -> None:
    # What virt-handler writes, as KubeVirt's does: zero times as null, which the cached model drops.
    cluster = Cluster()
    controllers = _start(cluster)
    schedule_pod(cluster, pod_name(_pods(cluster)[0]))
    controllers.run(only=("vmi",))
    migratable = {
        "type": "LiveMigratable",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": None,
    }

    def running(vmi: JSON) -> None:
        vmi["status"]["phase"] = "Running"
        vmi["status"]["conditions"] = [*vmi["status"]["conditions"], migratable]

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvmi", running)
    cluster.api.writes.clear()
    controllers.run(only=("vmi",))
    assert controllers.errors == []
    assert cluster.api.writes == [("patch", "virtualmachineinstances", None)]  # one write, no retries
    conditions = {c["type"]: c for c in _vmi(cluster)["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    assert conditions["LiveMigratable"]["status"] == "True"


def _running_with_ready_from_virt_handler(cluster: Cluster, controllers: Controllers) -> None:
    """virt-handler's first Running write, which carries Ready=True as the pod's would be copied."""
    schedule_pod(cluster, pod_name(_pods(cluster)[0]))
    controllers.run(only=("vmi",))

    def running(vmi: JSON) -> None:
        vmi["status"]["phase"] = "Running"
        vmi["status"]["conditions"] = [
            {
                "type": "Ready",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": "2026-12-01T00:00:09Z",
            }
            if c["type"] == "Ready"
            else c
            for c in vmi["status"]["conditions"]
        ]

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvmi", running)


def test_a_ready_condition_that_agrees_with_the_pod_is_not_written_again() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    _running_with_ready_from_virt_handler(cluster, controllers)
    before = _vmi(cluster)
    cluster.api.writes.clear()
    controllers.run(only=("vmi",))
    assert controllers.errors == []
    # The pod's Ready=True has other times (none here) but the same status and reason: nothing to write.
    assert [w for w in cluster.api.writes if w[1] == "virtualmachineinstances"] == []
    assert _vmi(cluster)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_pod_that_goes_not_ready_makes_the_controller_write_ready_false() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    _running_with_ready_from_virt_handler(cluster, controllers)
    controllers.run(only=("vmi",))

    def not_ready(pod: JSON) -> None:
        pod["status"]["conditions"] = [
            {
                "type": "Ready",
                "status": "False",
                "reason": "ContainersNotReady",
                "message": "containers with unready status: [compute]",
                "lastTransitionTime": "2026-12-01T00:01:00Z",
            }
            if c["type"] == "Ready"
            else c
            for c in pod["status"]["conditions"]
        ]

    cluster.api.edit(PODS, NAMESPACE, pod_name(_pods(cluster)[0]), not_ready)
    cluster.api.writes.clear()
    controllers.run(only=("vmi",))
    assert cluster.api.writes == [("patch", "virtualmachineinstances", None)]
    ready = next(c for c in _vmi(cluster)["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "ContainersNotReady",
        "containers with unready status: [compute]",
    )


def test_a_patch_computed_from_a_stale_cache_is_refused() -> None:
    cluster = Cluster()
    _start(cluster)
    stale = VirtualMachineInstance.from_dict(_vmi(cluster))
    wanted = stale.model_copy(deep=True)
    assert wanted.status is not None
    assert stale.metadata is not None
    wanted.status.phase = "Failed"
    ops = vmi_controller_status_patch(stale, wanted)
    assert ops[0] == {
        "op": "test",
        "path": "/metadata/resourceVersion",
        "value": stale.metadata.resource_version,
    }
    set_vmi_phase(cluster, "testvmi", "Running")  # someone else wrote since the cache was read
    with pytest.raises(InvalidError):
        cluster.api.patch(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvmi", ops)
    assert _vmi(cluster)["status"]["phase"] == "Running"


def test_the_pod_gets_the_unpaused_readiness_condition_and_the_node_label() -> None:
    cluster = Cluster()
    controllers = _start(cluster)
    schedule_pod(cluster, pod_name(_pods(cluster)[0]))
    controllers.run(only=("vmi",))
    pod = _pods(cluster)[0]
    unpaused = next(
        c for c in pod["status"]["conditions"] if c["type"] == "kubevirt.io/virtual-machine-unpaused"
    )
    assert unpaused["status"] == "True"
    assert pod["metadata"]["labels"]["kubevirt.io/nodeName"] == "node01"


def test_a_conflict_is_raised_for_the_queue_and_the_retry_succeeds() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, vmi_manifest("testvmi"))
    cluster.api.fail_next[("update", "virtualmachineinstances")] = ConflictError(409, "Conflict", "stale")
    controllers.run(only=("vmi",))
    assert [type(err) for _, _, err in controllers.errors] == [ConflictError]
    controllers.requeue_failed()
    controllers.run(only=("vmi",))
    assert _vmi(cluster)["status"]["phase"] == "Scheduling"
    assert len(_pods(cluster)) == 1


def test_a_restarted_controller_creates_no_second_pod() -> None:
    cluster = Cluster()
    first = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, vmi_manifest("testvmi"))
    cluster.api.fail_next[("update", "virtualmachineinstances")] = NotFoundError(404, "NotFound", "gone")
    first.run(only=("vmi",))  # the pod is created, then the status write fails: the process "dies" here
    assert len(_pods(cluster)) == 1
    cluster.restart()
    second = Controllers(cluster)
    second.run(only=("vmi",))
    assert len(_pods(cluster)) == 1
    assert _vmi(cluster)["status"]["phase"] == "Scheduling"


def test_a_stale_cache_never_creates_a_second_pod() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, vmi_manifest("testvmi"))
    cluster.sync()
    controllers.vmi.reconcile(f"{NAMESPACE}/testvmi")
    # The informer has not shown the pod yet: the expectation holds the next pass back.
    controllers.vmi.reconcile(f"{NAMESPACE}/testvmi")
    assert len(_pods(cluster)) == 1


def test_a_render_failure_is_reported_and_retried() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)

    def broken(_: object) -> dict[str, object]:
        raise ValueError("spec.domain.memory: missing")

    controllers.vmi._render_pod = broken
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, vmi_manifest("testvmi"))
    controllers.run(only=("vmi",))
    assert controllers.errors, "a render failure is retried through the queue"
    synchronized = next(c for c in _vmi(cluster)["status"]["conditions"] if c["type"] == "Synchronized")
    assert synchronized["reason"] == "FailedCreate"
    assert "spec.domain.memory: missing" in synchronized["message"]
    assert _vmi(cluster)["status"]["phase"] == "Pending"


def _running_vmi(cluster: Cluster, controllers: Controllers, change: Callable[[JSON], None]) -> JSON:
    """A Running VMI with its launcher pod, after ``change`` (what virt-api and virt-handler wrote)."""
    schedule_pod(cluster, pod_name(_pods(cluster)[0]))
    controllers.run(only=("vmi",))

    def running(vmi: JSON) -> None:
        vmi["status"]["phase"] = "Running"
        change(vmi)

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvmi", running)
    controllers.run(only=("vmi",))
    assert controllers.errors == []
    return _vmi(cluster)


def _conditions(vmi: JSON) -> dict[str, JSON]:
    return {c["type"]: c for c in vmi["status"]["conditions"]}


def test_a_vcpu_count_the_guest_does_not_have_yet_gets_hot_vcpu_change() -> None:
    def more_sockets(vmi: JSON) -> None:
        vmi["spec"]["domain"]["cpu"] = {"sockets": 2, "cores": 2, "threads": 1, "maxSockets": 4}
        vmi["status"]["currentCPUTopology"] = {"sockets": 1, "cores": 2, "threads": 1}

    cluster = Cluster()
    vmi = _running_vmi(cluster, controllers := _start(cluster), more_sockets)
    assert _conditions(vmi)["HotVCPUChange"] == {"type": "HotVCPUChange", "status": "True"}
    assert "HotMemoryChange" not in _conditions(vmi)
    # Once there, it is virt-handler's to remove: the controller adds no second one.
    cluster.api.writes.clear()
    controllers.queues["vmi"].add(f"{NAMESPACE}/testvmi")
    controllers.run(only=("vmi",))
    assert cluster.api.writes == []

    def same_count(vmi: JSON) -> None:
        more_sockets(vmi)
        vmi["status"]["currentCPUTopology"]["sockets"] = 2

    cluster2 = Cluster()
    assert "HotVCPUChange" not in _conditions(_running_vmi(cluster2, _start(cluster2), same_count))


def test_a_guest_memory_size_not_requested_yet_gets_hot_memory_change_and_the_overhead_ratio() -> None:
    def more_memory(vmi: JSON) -> None:
        vmi["spec"]["domain"]["memory"] = {"guest": "4Gi", "maxGuest": "8Gi"}
        vmi["status"]["memory"] = {"guestAtBoot": "2Gi", "guestCurrent": "2Gi", "guestRequested": "2Gi"}

    cluster = Cluster()
    controllers = _start(cluster)
    controllers.vmi._config = lambda: ClusterConfig(
        launcher=LauncherSettings(additional_guest_memory_overhead_ratio="2.0")
    )
    vmi = _running_vmi(cluster, controllers, more_memory)
    assert _conditions(vmi)["HotMemoryChange"] == {"type": "HotMemoryChange", "status": "True"}
    assert vmi["metadata"]["labels"]["kubevirt.io/memory-hotplug-overhead-ratio"] == "2.0"

    # Without maxGuest the VMI cannot take memory live: nothing is flagged.
    def no_max_guest(vmi: JSON) -> None:
        more_memory(vmi)
        del vmi["spec"]["domain"]["memory"]["maxGuest"]

    cluster2 = Cluster()
    vmi = _running_vmi(cluster2, _start(cluster2), no_max_guest)
    assert "HotMemoryChange" not in _conditions(vmi)
    assert "kubevirt.io/memory-hotplug-overhead-ratio" not in vmi["metadata"].get("labels", {})


def test_a_failed_memory_hotplug_condition_is_left_as_virt_handler_wrote_it() -> None:
    failed = {"type": "HotMemoryChange", "status": "False", "reason": "MemoryHotplugFailed"}

    def failed_hotplug(vmi: JSON) -> None:
        vmi["spec"]["domain"]["memory"] = {"guest": "4Gi", "maxGuest": "8Gi"}
        vmi["status"]["memory"] = {"guestAtBoot": "2Gi", "guestCurrent": "2Gi", "guestRequested": "2Gi"}
        vmi["status"]["conditions"] = [*vmi["status"]["conditions"], failed]

    cluster = Cluster()
    vmi = _running_vmi(cluster, _start(cluster), failed_hotplug)
    assert _conditions(vmi)["HotMemoryChange"] == failed
