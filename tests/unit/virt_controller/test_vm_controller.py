"""The VM controller against the in-memory API: run strategies, requests, backoff, status, faults."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    ConflictError,
    InvalidError,
)
from kubevirt.virt_controller.watch.firmware import calculate_legacy_uuid
from kubevirt.virt_controller.watch.pods import pod_name

from .fakes import JSON, Cluster
from .harness import NAMESPACE, Controllers, schedule_pod, set_vmi_phase, vm_manifest

KEY = f"{NAMESPACE}/testvm"


def _create_vm(cluster: Cluster, name: str = "testvm", **spec: Any) -> Controllers:
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest(name, **spec))
    controllers.run()
    return controllers


def _vm(cluster: Cluster, name: str = "testvm") -> JSON:
    return cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, name)


def _vmis(cluster: Cluster) -> list[JSON]:
    return cluster.api.find(VIRTUAL_MACHINE_INSTANCES, NAMESPACE)


def _request(cluster: Cluster, *requests: JSON) -> None:
    def change(vm: JSON) -> None:
        vm.setdefault("status", {})["stateChangeRequests"] = list(requests)

    cluster.api.edit(VIRTUAL_MACHINES, NAMESPACE, "testvm", change)


def _set_strategy(cluster: Cluster, strategy: str) -> None:
    def change(vm: JSON) -> None:
        vm["spec"]["runStrategy"] = strategy

    cluster.api.edit(VIRTUAL_MACHINES, NAMESPACE, "testvm", change)


def _run_to_running(cluster: Cluster, controllers: Controllers, name: str = "testvm") -> None:
    pod = cluster.api.find(PODS, NAMESPACE)[-1]
    schedule_pod(cluster, pod_name(pod))
    controllers.run()
    set_vmi_phase(cluster, name, "Running", conditions=[{"type": "Ready", "status": "True"}])
    controllers.run()


def _finish(cluster: Cluster, controllers: Controllers, phase: str) -> None:
    set_vmi_phase(cluster, "testvm", phase)
    controllers.run()


# -- the VMI built from the template ------------------------------------------------------------------


def test_always_creates_the_vmi_from_the_template() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Always")
    vm = _vm(cluster)
    [vmi] = _vmis(cluster)
    meta = vmi["metadata"]
    assert meta["name"] == "testvm"
    assert meta["labels"] == {"app": "testvm"}
    assert meta["annotations"]["note"] == "from-template"
    assert meta["annotations"]["kubevirt.io/vm-generation"] == "1"
    [owner] = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("VirtualMachine", "testvm", vm["metadata"]["uid"])
    assert owner["controller"] is True
    assert owner["blockOwnerDeletion"] is True
    assert "kubevirt.io/virtualMachineControllerFinalize" in meta["finalizers"]
    assert vmi["spec"]["domain"]["firmware"]["uuid"] == calculate_legacy_uuid("testvm")
    # A VM without a firmware UUID (made before virt-api assigned one) is given the same one.
    assert vm["spec"]["template"]["spec"]["domain"]["firmware"]["uuid"] == calculate_legacy_uuid("testvm")
    assert "kubevirt.io/virtualMachineControllerFinalize" in vm["metadata"]["finalizers"]
    assert vm["status"]["created"] is True
    assert vm["status"]["printableStatus"] == "Starting"
    assert vm["status"]["runStrategy"] == "Always"
    assert ("default/testvm", "Normal", "SuccessfulCreate") in {e[:3] for e in controllers.events.recorded}


def test_the_api_version_stamp_leaves_what_a_go_client_stored_in_the_spec() -> None:
    """Go clients store a template's ``creationTimestamp: null``; rewriting the spec without it would
    raise the generation that KubeVirt's clients compare with status.observedGeneration."""
    cluster = Cluster()
    vm = vm_manifest("testvm", runStrategy="Halted")
    vm["spec"]["template"]["metadata"]["creationTimestamp"] = None
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm)
    controllers.run()
    stored = _vm(cluster)
    assert stored["metadata"]["annotations"]["kubevirt.io/latest-observed-api-version"] == "v1"
    assert stored["spec"]["template"]["metadata"]["creationTimestamp"] is None


def test_the_legacy_uuid_is_kubevirts() -> None:
    # KubeVirt v1.6 gave the VMI "guestmem" this firmware UUID (conformance case 003-memory-guest-only).
    assert calculate_legacy_uuid("guestmem") == "78959717-9473-54ff-b52f-341e1c8d6af1"


def test_running_vm_reports_ready_and_running() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Always")
    _run_to_running(cluster, controllers)
    status = _vm(cluster)["status"]
    assert status["ready"] is True
    assert status["printableStatus"] == "Running"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"


def test_a_missing_pvc_holds_the_pod_back_and_the_vm_shows_error_pvc_not_found_until_it_appears() -> None:
    cluster = Cluster()
    vm = vm_manifest("testvm", runStrategy="Always")
    vm["spec"]["template"]["spec"]["volumes"] = [
        {"name": "root", "persistentVolumeClaim": {"claimName": "missing"}}
    ]
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm)
    controllers.run()
    assert cluster.api.find(PODS, NAMESPACE) == []
    [vmi] = _vmis(cluster)
    assert vmi["status"]["phase"] == "Pending"
    message = "PVC default/missing does not exist, waiting for it to appear"
    conditions = {c["type"]: c for c in vmi["status"]["conditions"]}
    synchronized, scheduled = conditions["Synchronized"], conditions["PodScheduled"]
    assert (synchronized["status"], synchronized["reason"]) == ("False", "FailedPvcNotFound")
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False",
        "Unschedulable",
        message,
    )
    assert _vm(cluster)["status"]["printableStatus"] == "ErrorPvcNotFound"
    assert ("default/testvm", "Normal", "FailedPvcNotFound", message) in controllers.events.recorded
    assert controllers.errors == []  # waiting is not a failure to retry with backoff

    cluster.api.create(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, _claim("missing", phase="Bound"))
    controllers.run()  # the claim's own event brings the VMI back
    assert len(cluster.api.find(PODS, NAMESPACE)) == 1
    assert _vm(cluster)["status"]["printableStatus"] == "Starting"
    left = {c["type"] for c in _vmis(cluster)[0]["status"].get("conditions") or []}
    assert not left & {"Synchronized", "PodScheduled"}


def _claim(name: str, *, phase: str | None = None, storage_class: str | None = None) -> JSON:
    claim: JSON = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    if storage_class is not None:
        claim["spec"]["storageClassName"] = storage_class
    if phase is not None:
        claim["status"] = {"phase": phase}
    return claim


def _vm_with_claim(cluster: Cluster, claim: str = "disk", **spec: Any) -> Controllers:
    vm = vm_manifest("testvm", **spec)
    vm["spec"]["template"]["spec"]["volumes"] = [
        {"name": "root", "persistentVolumeClaim": {"claimName": claim}}
    ]
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm)
    controllers.run()
    return controllers


def _bind_claim(cluster: Cluster, name: str = "disk") -> None:
    def bind(claim: JSON) -> None:
        claim["status"] = {"phase": "Bound", "capacity": {"storage": "1Gi"}}

    cluster.api.edit(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, name, bind)


def test_a_pending_claim_starts_the_pod_and_the_vm_waits_for_volume_binding_until_it_binds() -> None:
    """KubeVirt creates the launcher pod for a plain claim that is not bound yet (a WaitForFirstConsumer
    claim binds only once that pod is scheduled); the VM shows WaitingForVolumeBinding meanwhile."""
    cluster = Cluster()
    cluster.api.create(
        PERSISTENT_VOLUME_CLAIMS, NAMESPACE, _claim("disk", phase="Pending", storage_class="wffc")
    )
    controllers = _vm_with_claim(cluster, runStrategy="Always")
    [pod] = cluster.api.find(PODS, NAMESPACE)
    [vmi] = _vmis(cluster)
    assert vmi["status"]["phase"] == "Scheduling"
    assert "Synchronized" not in {c["type"] for c in vmi["status"].get("conditions") or []}
    status = _vm(cluster)["status"]
    assert status["printableStatus"] == "WaitingForVolumeBinding"
    assert "Failure" not in {c["type"] for c in status["conditions"]}

    _bind_claim(cluster)
    controllers.run()  # the claim's change alone brings the VM back
    assert _vm(cluster)["status"]["printableStatus"] == "Starting"
    schedule_pod(cluster, pod_name(pod))
    controllers.run()
    assert _vmis(cluster)[0]["status"]["phase"] == "Scheduled"
    assert controllers.errors == []


def test_a_claim_that_never_binds_leaves_the_vm_unschedulable_with_the_schedulers_message() -> None:
    """An unknown storage class: the claim stays Pending and the scheduler refuses the pod; KubeVirt's
    order puts ErrorUnschedulable before WaitingForVolumeBinding."""
    cluster = Cluster()
    cluster.api.create(
        PERSISTENT_VOLUME_CLAIMS, NAMESPACE, _claim("disk", phase="Pending", storage_class="nope")
    )
    controllers = _vm_with_claim(cluster, runStrategy="Always")
    assert _vm(cluster)["status"]["printableStatus"] == "WaitingForVolumeBinding"
    message = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."

    def refuse(pod: JSON) -> None:
        pod["status"] = {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
            ],
        }

    cluster.api.edit(PODS, NAMESPACE, pod_name(cluster.api.find(PODS, NAMESPACE)[0]), refuse)
    controllers.run()
    [vmi] = _vmis(cluster)
    assert vmi["status"]["phase"] == "Scheduling"
    scheduled = next(c for c in vmi["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False",
        "Unschedulable",
        message,
    )
    status = _vm(cluster)["status"]
    assert status["printableStatus"] == "ErrorUnschedulable"
    vm_scheduled = next(c for c in status["conditions"] if c["type"] == "PodScheduled")
    assert (vm_scheduled["reason"], vm_scheduled["message"]) == ("Unschedulable", message)
    assert controllers.errors == []


def test_waiting_for_volume_binding_needs_a_vm_set_to_start() -> None:
    cluster = Cluster()
    cluster.api.create(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, _claim("disk", phase="Pending"))
    _vm_with_claim(cluster, runStrategy="Halted")
    assert _vm(cluster)["status"]["printableStatus"] == "Stopped"


# -- run strategies -----------------------------------------------------------------------------------


def test_halted_creates_nothing_and_stopping_deletes_the_vmi() -> None:
    cluster = Cluster()
    _create_vm(cluster, runStrategy="Halted")
    assert _vmis(cluster) == []
    assert _vm(cluster)["status"]["printableStatus"] == "Stopped"
    assert "runStrategy" not in _vm(cluster)["status"]  # only recorded once a VMI was created

    controllers = _create_vm(cluster, name="other", runStrategy="Always")
    assert len(_vmis(cluster)) == 1

    def halt(vm: JSON) -> None:
        vm["spec"]["runStrategy"] = "Halted"

    cluster.api.edit(VIRTUAL_MACHINES, NAMESPACE, "other", halt)
    controllers.run()
    assert [v["metadata"]["name"] for v in _vmis(cluster) if not v["metadata"].get("deletionTimestamp")] == []


def test_legacy_running_true_and_false() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, running=True)
    assert len(_vmis(cluster)) == 1

    def stop(vm: JSON) -> None:
        vm["spec"]["running"] = False

    cluster.api.edit(VIRTUAL_MACHINES, NAMESPACE, "testvm", stop)
    controllers.run()
    assert _vmis(cluster) == []
    assert _vm(cluster)["status"]["printableStatus"] == "Stopped"


def test_always_recreates_a_finished_vmi() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Always")
    _run_to_running(cluster, controllers)
    first_uid = _vmis(cluster)[0]["metadata"]["uid"]
    _finish(cluster, controllers, "Succeeded")
    [vmi] = _vmis(cluster)
    assert vmi["metadata"]["uid"] != first_uid


def test_rerun_on_failure_restarts_after_failure_but_not_after_success() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="RerunOnFailure")
    _run_to_running(cluster, controllers)
    first_uid = _vmis(cluster)[0]["metadata"]["uid"]
    _finish(cluster, controllers, "Failed")
    [vmi] = _vmis(cluster)
    assert vmi["metadata"]["uid"] != first_uid
    assert not _vm(cluster)["status"].get("stateChangeRequests")  # the start request was used up

    _run_to_running(cluster, controllers)
    _finish(cluster, controllers, "Succeeded")
    assert _vmis(cluster) == []
    assert _vm(cluster)["status"]["printableStatus"] == "Stopped"


def test_once_keeps_the_finished_vmi() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Once")
    _run_to_running(cluster, controllers)
    _finish(cluster, controllers, "Failed")
    [vmi] = _vmis(cluster)
    assert vmi["status"]["phase"] == "Failed"
    assert _vm(cluster)["status"]["printableStatus"] == "Stopped"
    # With the VM's state recorded, its finalizer leaves the final VMI.
    assert "kubevirt.io/virtualMachineControllerFinalize" not in (vmi["metadata"].get("finalizers") or [])


def test_manual_acts_only_on_requests() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Manual")
    assert _vmis(cluster) == []
    _request(cluster, {"action": "Start"})
    controllers.run()
    [vmi] = _vmis(cluster)
    assert not _vm(cluster)["status"].get("stateChangeRequests")
    _run_to_running(cluster, controllers)
    _finish(cluster, controllers, "Succeeded")
    assert len(_vmis(cluster)) == 1  # a final VMI is left alone
    _request(cluster, {"action": "Stop", "uid": vmi["metadata"]["uid"]})
    controllers.run()
    assert _vmis(cluster) == []
    assert not _vm(cluster)["status"].get("stateChangeRequests")


def test_stop_then_start_requests_restart_the_vmi() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Always")
    _run_to_running(cluster, controllers)
    old_uid = _vmis(cluster)[0]["metadata"]["uid"]
    _request(cluster, {"action": "Stop", "uid": old_uid}, {"action": "Start"})
    controllers.run()
    [vmi] = _vmis(cluster)
    assert vmi["metadata"]["uid"] != old_uid
    assert not _vm(cluster)["status"].get("stateChangeRequests")


def test_a_stop_request_for_another_vmi_is_dropped() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Always")
    uid = _vmis(cluster)[0]["metadata"]["uid"]
    _request(cluster, {"action": "Stop", "uid": "not-this-one"})
    controllers.run()
    assert _vmis(cluster)[0]["metadata"]["uid"] == uid
    assert not _vm(cluster)["status"].get("stateChangeRequests")


def test_start_paused_request_on_halted_vm_switches_it_to_always_and_starts_paused() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Halted")
    _request(cluster, {"action": "Start", "data": {"paused": "true"}})
    controllers.run()
    assert _vm(cluster)["spec"]["runStrategy"] == "Always"
    [vmi] = _vmis(cluster)
    assert vmi["spec"]["startStrategy"] == "Paused"


# -- start-failure backoff ----------------------------------------------------------------------------


def test_a_vmi_failing_before_running_backs_off_the_next_start() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Always")
    first_uid = _vmis(cluster)[0]["metadata"]["uid"]
    _finish(cluster, controllers, "Failed")  # never reached Running
    failure = _vm(cluster)["status"]["startFailure"]
    assert failure["consecutiveFailCount"] == 1
    assert failure["lastFailedVMIUID"] == first_uid
    assert _vmis(cluster) == []  # deleted, and not recreated yet
    assert _vm(cluster)["status"]["printableStatus"] == "CrashLoopBackOff"
    delay = controllers.queues["vm"].delayed[KEY]
    assert 10 <= delay <= 15  # 10 s for the first failure, plus up to half at random

    cluster.api.clock.advance(delay)
    controllers.requeue_failed()
    controllers.run()
    [vmi] = _vmis(cluster)
    assert vmi["metadata"]["uid"] != first_uid
    _run_to_running(cluster, controllers)
    assert "startFailure" not in _vm(cluster)["status"]  # cleared once a VMI ran


def test_backoff_grows_quadratically_and_is_capped() -> None:
    import random

    from kubevirt.virt_controller.watch.startfailure import backoff_seconds

    rng = random.Random(3)
    assert [backoff_seconds(n, 300, random.Random(0)) >= 10 * n * n for n in (1, 2, 3)] == [True] * 3
    assert backoff_seconds(2, 300, rng) <= 60
    assert backoff_seconds(100, 300, rng) == 300


# -- printable status order ---------------------------------------------------------------------------


def test_printable_status_first_match_wins() -> None:
    from datetime import UTC, datetime

    from kubevirt.virt_controller.watch.printable import VMState, printable_status
    from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance

    now = datetime(2026, 1, 1, tzinfo=UTC)
    vm = VirtualMachine.from_dict(vm_manifest("testvm", runStrategy="Always"))
    deleting = VirtualMachine.from_dict(
        {**vm_manifest("testvm", runStrategy="Always"), "metadata": {"name": "t", "deletionTimestamp": "x"}}
    )

    def vmi(phase: str, **status: Any) -> VirtualMachineInstance:
        return VirtualMachineInstance.from_dict(
            {
                "metadata": {"name": "t"},
                "spec": {"domain": {"devices": {}}},
                "status": {"phase": phase, **status},
            }
        )

    paused = [{"type": "Paused", "status": "True"}]
    migrating = {"migrationState": {"startTimestamp": "2025-12-31T00:00:00Z"}}
    unschedulable = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    pull = [{"type": "Synchronized", "status": "False", "reason": "ImagePullBackOff"}]
    no_pvc = [{"type": "Synchronized", "status": "False", "reason": "FailedPvcNotFound"}]
    cases = [
        (VMState(deleting, vmi("Running", conditions=paused), False, False, now), "Terminating"),
        (VMState(vm, vmi("Running", **migrating), False, True, now), "Stopping"),
        (VMState(vm, vmi("Running", conditions=paused, **migrating), False, False, now), "Migrating"),
        (VMState(vm, vmi("Running", conditions=paused), False, False, now), "Paused"),
        (VMState(vm, vmi("Running"), False, False, now), "Running"),
        (
            VMState(vm, vmi("Scheduling", conditions=[*unschedulable, *pull]), False, False, now),
            "ErrorUnschedulable",
        ),
        (
            VMState(vm, vmi("Pending", conditions=[*no_pvc, *unschedulable]), False, False, now, True),
            "ErrorPvcNotFound",
        ),
        (
            VMState(vm, vmi("Scheduling", conditions=[*unschedulable]), False, False, now, True),
            "ErrorUnschedulable",
        ),
        (VMState(vm, vmi("Scheduling", conditions=pull), False, False, now, True), "WaitingForVolumeBinding"),
        (VMState(vm, None, True, False, now, True), "WaitingForVolumeBinding"),
        (VMState(vm, vmi("Scheduling", conditions=pull), False, False, now), "ImagePullBackOff"),
        (VMState(vm, vmi("Pending"), False, False, now), "Starting"),
        (VMState(vm, None, True, False, now), "Starting"),
        (VMState(vm, vmi("Failed"), False, False, now), "Stopped"),
        (VMState(vm, None, False, False, now), "Stopped"),
    ]
    assert [printable_status(state) for state, _ in cases] == [expected for _, expected in cases]


# -- deletion -----------------------------------------------------------------------------------------


def test_deleting_the_vm_deletes_its_vmi_then_drops_the_vm_finalizer() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, runStrategy="Always")
    cluster.api.delete(VIRTUAL_MACHINES, NAMESPACE, "testvm")
    cluster.sync()
    controllers.vm.reconcile(KEY)
    assert _vm(cluster)["status"]["printableStatus"] == "Terminating"
    [vmi] = _vmis(cluster)
    assert vmi["metadata"].get("deletionTimestamp")
    # The launcher pod goes, the VMI fails without it, every finalizer is released in turn.
    controllers.run()
    assert cluster.api.find(PODS) == []
    assert _vmis(cluster) == []
    assert cluster.api.find(VIRTUAL_MACHINES) == []


# -- faults -------------------------------------------------------------------------------------------


def test_a_vmi_refused_by_admission_is_reported_on_the_vm_and_backs_off() -> None:
    cluster = Cluster()

    def refuse(_: JSON) -> None:
        raise InvalidError(
            422,
            "Invalid",
            'admission webhook "virtualmachineinstances-create-validator.kubevirt.io" denied the request: '
            "spec.domain.devices.disks[0].name: must be unique",
        )

    cluster.api.admission[VIRTUAL_MACHINE_INSTANCES.plural] = refuse
    controllers = Controllers(cluster)
    cluster.api.admission[VIRTUAL_MACHINE_INSTANCES.plural] = refuse
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest("testvm", runStrategy="Always"))
    controllers.run()
    failure = next(c for c in _vm(cluster)["status"]["conditions"] if c["type"] == "Failure")
    assert failure["reason"] == "FailedCreate"
    assert "spec.domain.devices.disks[0].name: must be unique" in failure["message"]
    refusals = [e for e in controllers.events.recorded if e[2] == "FailedCreate"]
    assert refusals
    assert all(kind == "Warning" and "must be unique" in message for _, kind, _, message in refusals)
    assert {key for _, key, _ in controllers.errors} == {KEY}  # raised: the queue retries with backoff

    # A retry refused the same way writes nothing new: no hot loop of VM writes.
    writes = len(cluster.api.writes)
    controllers.requeue_failed()
    controllers.run()
    assert len(cluster.api.writes) == writes
    assert _vmis(cluster) == []


def test_a_conflict_on_the_status_write_is_retried() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest("testvm", runStrategy="Always"))
    cluster.api.fail_next[("update_status", "virtualmachines")] = ConflictError(409, "Conflict", "stale")
    controllers.run()
    assert any(isinstance(err, ConflictError) for _, _, err in controllers.errors)
    controllers.requeue_failed()
    controllers.run()
    assert _vm(cluster)["status"]["created"] is True
    assert len(_vmis(cluster)) == 1


def test_no_duplicate_vmi_after_a_restart() -> None:
    cluster = Cluster()
    first = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest("testvm", runStrategy="Always"))
    cluster.sync()
    first.vm.reconcile(KEY)  # api-version stamp
    cluster.sync()
    first.vm.reconcile(KEY)  # finalizer, VMI create, status: then the process dies
    assert len(_vmis(cluster)) == 1
    cluster.restart()
    second = Controllers(cluster)
    second.run()
    assert len(_vmis(cluster)) == 1
    assert len(cluster.api.find(PODS, NAMESPACE)) == 1


def test_a_stale_cache_does_not_create_twice() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest("testvm", runStrategy="Always"))
    controllers.run(only=())
    cluster.sync()
    controllers.vm.reconcile(KEY)
    cluster.sync()
    controllers.vm.reconcile(KEY)  # creates the VMI; the cache has not seen it
    with pytest.raises(ConflictError):
        controllers.vm.reconcile(KEY)  # the VM object changed meanwhile; the VMI is not created again
    assert len(_vmis(cluster)) == 1


def test_running_and_run_strategy_together_are_reported_and_start_nothing() -> None:
    cluster = Cluster()
    controllers = _create_vm(cluster, running=True, runStrategy="Always")
    failure = next(c for c in _vm(cluster)["status"]["conditions"] if c["type"] == "Failure")
    assert failure["reason"] == "FailedCreate"
    assert "running and runstrategy are mutually exclusive" in failure["message"]
    assert _vmis(cluster) == []
    assert controllers.errors


def test_a_vm_without_a_template_spec_is_reported_once_and_not_retried() -> None:
    cluster = Cluster()
    manifest = vm_manifest("testvm", runStrategy="Always")
    del manifest["spec"]["template"]["spec"]
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, manifest)
    controllers.run()
    failure = next(c for c in _vm(cluster)["status"]["conditions"] if c["type"] == "Failure")
    assert failure["message"] == "spec.template.spec: required"
    assert controllers.errors == []


def test_handlers_count_only_what_the_cache_shows() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest("testvm", runStrategy="Always"))
    cluster.sync()
    controllers.vm.reconcile(KEY)
    cluster.sync()
    controllers.queues["vm"].keys.clear()
    controllers.vm.reconcile(KEY)  # creates the VMI and now expects to see it
    assert controllers.vm._expectations.pending(KEY) == (1, 0)
    vmi = cluster.informers[VIRTUAL_MACHINE_INSTANCES.plural]
    before = len(controllers.queues["vm"].keys)
    cluster.sync()  # the informer delivers the VMI: the creation is observed and the VM queued
    assert controllers.vm._expectations.pending(KEY) == (0, 0)
    assert len(controllers.queues["vm"].keys) > before
    # A resync (same resourceVersion) wakes nobody.
    [cached] = vmi.store.list()
    controllers.queues["vm"].keys.clear()
    controllers.vm.on_vmi_update(cached, cached)
    assert controllers.queues["vm"].keys == []
