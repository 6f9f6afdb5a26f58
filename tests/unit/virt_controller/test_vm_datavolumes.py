"""CDI DataVolumes in the VM and VMI controllers, against the in-memory API with the test playing CDI:
DataVolumes made from a VM's templates, the VM and its VMI waiting for them, the printable statuses,
the VMI's DataVolumesReady condition, WaitForFirstConsumer claims and clone authorization."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.client.resources import DATA_VOLUMES
from kubevirt.virt_controller.watch.cloneauth import CloneAuthorizer
from kubevirt.virt_controller.watch.pods import pod_name
from kubevirt.virt_controller.watch.printable import VMState, printable_status
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance

from .fakes import JSON, Cluster
from .harness import NAMESPACE, Controllers, bind_pod, start_pod, vm_manifest

STORAGE_TEMPLATE: JSON = {
    "metadata": {"name": "rootdisk", "labels": {"disk": "root"}, "annotations": {"note": "kept"}},
    "spec": {
        "source": {"http": {"url": "http://images.local/cirros.img"}},
        "storage": {"resources": {"requests": {"storage": "1Gi"}}},
    },
}
PVC_TEMPLATE: JSON = {
    "metadata": {"name": "rootdisk"},
    "spec": {
        "source": {"blank": {}},
        "pvc": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    },
}


def _vm(template: JSON = STORAGE_TEMPLATE, *, strategy: str = "Always", **extra: Any) -> JSON:
    vm = vm_manifest("testvm", runStrategy=strategy, dataVolumeTemplates=[copy.deepcopy(template)])
    spec = vm["spec"]["template"]["spec"]
    spec["volumes"] = [{"name": "root", "dataVolume": {"name": template["metadata"]["name"]}}]
    spec["domain"]["devices"]["disks"] = [{"name": "root", "disk": {"bus": "virtio"}}]
    spec["priorityClassName"] = "vm-priority"
    vm["metadata"].update(extra)
    return vm


def _start(
    vm: JSON, *, authorizer: CloneAuthorizer | None = None, cluster: Cluster | None = None
) -> tuple[Cluster, Controllers]:
    cluster = cluster or Cluster()
    controllers = Controllers(cluster, cdi=True, clone_authorizer=authorizer)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm)
    controllers.run()
    return cluster, controllers


def _status(cluster: Cluster) -> JSON:
    return cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, "testvm").get("status") or {}


def _dvs(cluster: Cluster) -> list[JSON]:
    return cluster.api.find(DATA_VOLUMES, NAMESPACE)


def _vmis(cluster: Cluster) -> list[JSON]:
    return cluster.api.find(VIRTUAL_MACHINE_INSTANCES, NAMESPACE)


def _play_cdi(
    cluster: Cluster, phase: str, *, ready: str = "False", claim_phase: str = "Bound", **conditions: Any
) -> None:
    """CDI: the DataVolume's claim (made once, owned by it) and the DataVolume's phase and conditions."""
    [dv] = _dvs(cluster)
    name = dv["metadata"]["name"]
    if not cluster.api.find(PERSISTENT_VOLUME_CLAIMS, NAMESPACE):
        owner = {
            "apiVersion": "cdi.kubevirt.io/v1beta1",
            "kind": "DataVolume",
            "name": name,
            "uid": dv["metadata"]["uid"],
            "controller": True,
        }
        claim = {"metadata": {"name": name, "ownerReferences": [owner]}, "spec": {}}
        cluster.api.create(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, claim)

    def set_claim(pvc: JSON) -> None:
        pvc["status"] = {"phase": claim_phase}

    cluster.api.edit(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, name, set_claim)
    listed = [{"type": "Ready", "status": ready}]
    listed += [{"type": kind, **value} for kind, value in conditions.items()]

    def set_status(obj: JSON) -> None:
        obj["status"] = {"phase": phase, "conditions": listed}

    cluster.api.edit(DATA_VOLUMES, NAMESPACE, name, set_status)


def _events(controllers: Controllers, reason: str) -> list[str]:
    return [message for _, _, found, message in controllers.events.recorded if found == reason]


# -- the DataVolumes made from the templates ------------------------------------------------------------


def test_each_template_becomes_a_data_volume_owned_by_the_vm() -> None:
    cluster, controllers = _start(_vm())
    vm = cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, "testvm")
    [dv] = _dvs(cluster)
    meta = dv["metadata"]
    assert meta["name"] == "rootdisk"
    assert meta["labels"] == {"disk": "root", "kubevirt.io/created-by": vm["metadata"]["uid"]}
    assert meta["annotations"] == {"note": "kept", "cdi.kubevirt.io/allowClaimAdoption": "true"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "name": "testvm",
            "uid": vm["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert dv["spec"] == {**STORAGE_TEMPLATE["spec"], "priorityClassName": "vm-priority"}
    assert _events(controllers, "SuccessfulDataVolumeCreate") == ["Created DataVolume rootdisk"]


def test_a_template_of_the_pvc_api_keeps_its_claim_spec_and_priority_class() -> None:
    template = copy.deepcopy(PVC_TEMPLATE)
    template["spec"]["priorityClassName"] = "own"
    cluster, _ = _start(_vm(template))
    [dv] = _dvs(cluster)
    assert dv["spec"]["pvc"] == PVC_TEMPLATE["spec"]["pvc"]
    assert dv["spec"]["priorityClassName"] == "own"
    assert "storage" not in dv["spec"]


def test_the_vmi_waits_until_the_data_volume_succeeded_and_the_vm_says_provisioning() -> None:
    cluster, controllers = _start(_vm())
    assert _vmis(cluster) == []
    assert _status(cluster)["printableStatus"] == "Provisioning"
    _play_cdi(cluster, "ImportInProgress", Bound={"status": "True"})
    controllers.run()
    assert _vmis(cluster) == []
    assert _status(cluster)["printableStatus"] == "Provisioning"
    _play_cdi(cluster, "Succeeded", ready="True", Bound={"status": "True"})
    controllers.run()
    [vmi] = _vmis(cluster)
    assert vmi["spec"]["volumes"] == [{"name": "root", "dataVolume": {"name": "rootdisk"}}]
    assert _status(cluster)["printableStatus"] == "Starting"
    assert len(_dvs(cluster)) == 1  # not created again


def test_a_halted_vm_gets_its_data_volumes_but_no_vmi() -> None:
    cluster, _ = _start(_vm(strategy="Halted"))
    assert [dv["metadata"]["name"] for dv in _dvs(cluster)] == ["rootdisk"]
    assert _vmis(cluster) == []
    assert _status(cluster)["printableStatus"] == "Provisioning"


def test_the_annotation_defers_the_data_volumes_to_the_start() -> None:
    vm = _vm(strategy="Halted", annotations={"kubevirt.io/immediate-data-volume-creation": "false"})
    cluster, _ = _start(vm)
    assert _dvs(cluster) == []
    assert _status(cluster)["printableStatus"] == "Stopped"


def test_a_data_volume_waiting_for_its_first_consumer_lets_the_vm_start() -> None:
    cluster, controllers = _start(_vm())
    _play_cdi(cluster, "WaitForFirstConsumer", claim_phase="Pending")
    controllers.run()
    assert len(_vmis(cluster)) == 1
    # Not Provisioning while unbound: its claim waits for binding.
    assert _status(cluster)["printableStatus"] == "WaitingForVolumeBinding"


def test_provisioning_comes_before_waiting_for_volume_binding() -> None:
    cluster, controllers = _start(_vm())
    _play_cdi(cluster, "WaitForFirstConsumer", claim_phase="Pending", Bound={"status": "True"})
    controllers.run()
    assert _status(cluster)["printableStatus"] == "Provisioning"


def test_a_failed_data_volume_is_a_data_volume_error() -> None:
    cluster, controllers = _start(_vm())
    _play_cdi(cluster, "Failed")
    controllers.run()
    assert _vmis(cluster) == []
    assert _status(cluster)["printableStatus"] == "DataVolumeError"
    assert "DataVolume rootdisk failed to import disk image" in _events(controllers, "FailedDataVolumeImport")


def test_an_importer_stopped_on_an_error_is_a_data_volume_error() -> None:
    cluster, controllers = _start(_vm())
    _play_cdi(cluster, "ImportInProgress", Running={"status": "False", "reason": "Error", "message": "404"})
    controllers.run()
    assert _status(cluster)["printableStatus"] == "DataVolumeError"


def test_a_quota_refusal_fails_the_sync() -> None:
    cluster, controllers = _start(_vm())
    _play_cdi(
        cluster, "Pending", Bound={"status": "Unknown", "reason": "ErrExceededQuota", "message": "quota"}
    )
    controllers.run()
    [failure] = [c for c in _status(cluster)["conditions"] if c["type"] == "Failure"]
    assert failure["reason"] == "FailedCreate"
    assert failure["message"] == (
        "Error encountered while creating DataVolumes: "
        "DataVolume rootdisk importer is not running due to an error: quota"
    )
    assert set(_events(controllers, "FailedDataVolumeImport")) == {"DataVolume rootdisk exceeds quota limits"}


def test_a_refused_creation_is_reported() -> None:
    cluster = Cluster()
    cluster.api.fail_next[("create", "datavolumes")] = RuntimeError("admission denied")
    controllers = Controllers(cluster, cdi=True)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, _vm())
    for _ in range(10):  # until the first refusal (the first passes stamp the VM)
        controllers.run(rounds=1)
        if _events(controllers, "FailedDataVolumeCreate"):
            break
    assert _events(controllers, "FailedDataVolumeCreate") == [
        "Error creating DataVolume rootdisk: admission denied"
    ]
    [failure] = [c for c in _status(cluster)["conditions"] if c["type"] == "Failure"]
    assert failure["message"] == (
        "Error encountered while creating DataVolumes: failed to create DataVolume: admission denied"
    )
    controllers.requeue_failed()
    controllers.run()  # retried: the server accepts it now
    assert len(_dvs(cluster)) == 1
    assert all(c["type"] != "Failure" for c in _status(cluster)["conditions"])


def test_an_orphaned_data_volume_of_a_template_name_is_adopted() -> None:
    cluster = Cluster()
    cluster.api.create(DATA_VOLUMES, NAMESPACE, {"metadata": {"name": "rootdisk"}, "spec": {}})
    _start(_vm(), cluster=cluster)
    [dv] = _dvs(cluster)
    [ref] = dv["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("VirtualMachine", "testvm", True)


def test_without_cdi_a_vm_without_templates_never_reaches_for_data_volumes() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    vm = vm_manifest("testvm", runStrategy="Always")
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm)
    controllers.run()
    assert len(_vmis(cluster)) == 1
    assert "datavolumes" not in cluster.informers
    assert [w for w in cluster.api.writes if w[1] == "datavolumes"] == []


# -- clones --------------------------------------------------------------------------------------------


class _Reviews:
    """The API server's SubjectAccessReviews, answering ``allowed`` to each."""

    def __init__(self, allowed: bool) -> None:
        self.allowed = allowed
        self.sent: list[JSON] = []

    def create(self, review: JSON) -> Mapping[str, Any]:
        self.sent.append(review)
        return {**review, "status": {"allowed": self.allowed}}

    def authorizer(self) -> CloneAuthorizer:
        return CloneAuthorizer(create_review=self.create, namespace_exists=lambda _: True)


def _clone_template(namespace: str) -> JSON:
    source: JSON = {"name": "golden", "namespace": namespace}
    return {
        "metadata": {"name": "rootdisk"},
        "spec": {"source": {"pvc": source}, "storage": {"resources": {"requests": {"storage": "1Gi"}}}},
    }


def test_a_clone_the_service_account_may_not_read_is_refused() -> None:
    reviews = _Reviews(allowed=False)
    cluster, controllers = _start(_vm(_clone_template("golden-images")), authorizer=reviews.authorizer())
    assert _dvs(cluster) == []
    refusal = (
        "User system:serviceaccount:default:default has insufficient permissions "
        "in clone source namespace golden-images"
    )
    assert set(_events(controllers, "UnauthorizedDataVolumeCreate")) == {
        f"Not authorized to create DataVolume rootdisk: {refusal}"
    }
    [failure] = [c for c in _status(cluster)["conditions"] if c["type"] == "Failure"]
    assert failure["message"] == (
        f"Error encountered while creating DataVolumes: not authorized to create DataVolume: {refusal}"
    )
    first = reviews.sent[0]["spec"]
    assert first["user"] == "system:serviceaccount:default:default"
    assert first["resourceAttributes"] == {
        "namespace": "golden-images",
        "verb": "create",
        "group": "cdi.kubevirt.io",
        "resource": "datavolumes",
        "subresource": "source",
        "name": "golden",
    }
    assert [r["spec"]["resourceAttributes"]["resource"] for r in reviews.sent[:2]] == ["datavolumes", "pods"]
    assert set(_events(controllers, "SourcePVCNotAvailabe")) == {
        "Source PVC golden not available: Target PVC rootdisk will remain unpopulated until source is created"
    }


def test_a_clone_the_service_account_may_read_is_created_with_the_source_namespace() -> None:
    reviews = _Reviews(allowed=True)
    vm = _vm(_clone_template("golden-images"))
    vm["spec"]["template"]["spec"]["volumes"].append(
        {"name": "sa", "serviceAccount": {"serviceAccountName": "vms"}}
    )
    cluster, _ = _start(vm, authorizer=reviews.authorizer())
    [dv] = _dvs(cluster)
    assert dv["spec"]["source"] == {"pvc": {"name": "golden", "namespace": "golden-images"}}
    assert reviews.sent[0]["spec"]["user"] == "system:serviceaccount:default:vms"


def test_a_clone_within_the_namespace_needs_no_review() -> None:
    reviews = _Reviews(allowed=False)
    cluster, _ = _start(_vm(_clone_template(NAMESPACE)), authorizer=reviews.authorizer())
    [dv] = _dvs(cluster)
    assert dv["spec"]["source"] == {"pvc": {"name": "golden", "namespace": NAMESPACE}}
    assert reviews.sent == []


# -- the VMI and its pod ---------------------------------------------------------------------------------


def _vmi_with_data_volume(cluster: Cluster, controllers: Controllers) -> None:
    """A VMI of its own with a DataVolume volume (the VM's wait is not in the way)."""
    cluster.api.create(DATA_VOLUMES, NAMESPACE, {"metadata": {"name": "rootdisk"}, "spec": {}})
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "testvmi", "namespace": NAMESPACE},
        "spec": {
            "domain": {"devices": {}, "memory": {"guest": "128Mi"}},
            "volumes": [{"name": "root", "dataVolume": {"name": "rootdisk"}}],
        },
    }
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, vmi)


def _vmi_status(cluster: Cluster) -> JSON:
    return cluster.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvmi").get("status") or {}


def _condition(status: JSON, kind: str) -> JSON | None:
    return next((c for c in status.get("conditions") or () if c["type"] == kind), None)


def test_no_launcher_pod_before_the_data_volume_is_populated() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster, cdi=True)
    _vmi_with_data_volume(cluster, controllers)
    _play_cdi(cluster, "ImportInProgress")
    controllers.run()
    assert cluster.api.find(PODS, NAMESPACE) == []
    status = _vmi_status(cluster)
    assert status["phase"] == "Pending"
    assert _condition(status, "DataVolumesReady") == {
        "type": "DataVolumesReady",
        "status": "False",
        "reason": "NotAllDVsReady",
        "message": "Not all of the VMI's DVs are ready",
    }
    _play_cdi(cluster, "Succeeded", ready="True")
    controllers.run()
    assert len(cluster.api.find(PODS, NAMESPACE)) == 1
    assert _condition(_vmi_status(cluster), "DataVolumesReady") == {
        "type": "DataVolumesReady",
        "status": "True",
        "reason": "AllDVsReady",
        "message": "All of the VMI's DVs are bound and ready",
    }


def test_a_data_volume_without_a_ready_condition_is_unknown() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster, cdi=True)
    _vmi_with_data_volume(cluster, controllers)
    _play_cdi(cluster, "ImportInProgress")

    def drop_conditions(dv: JSON) -> None:
        dv["status"].pop("conditions")

    cluster.api.edit(DATA_VOLUMES, NAMESPACE, "rootdisk", drop_conditions)
    controllers.run()
    condition = _condition(_vmi_status(cluster), "DataVolumesReady")
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("Unknown", "NotAllDVsReady")


def test_a_failed_data_volume_fails_the_pending_vmi() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster, cdi=True)
    _vmi_with_data_volume(cluster, controllers)
    _play_cdi(cluster, "Failed")
    controllers.run()
    assert _vmi_status(cluster)["phase"] == "Failed"
    assert cluster.api.find(PODS, NAMESPACE) == []


def test_a_claim_waiting_for_its_first_consumer_gets_a_temporary_pod_first() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster, cdi=True)
    _vmi_with_data_volume(cluster, controllers)
    _play_cdi(cluster, "WaitForFirstConsumer", claim_phase="Pending")
    controllers.run()
    [temporary] = cluster.api.find(PODS, NAMESPACE)
    assert temporary["metadata"]["annotations"]["kubevirt.io/ephemeral-provisioning"] == "true"
    [compute] = temporary["spec"]["containers"]
    assert compute["command"] == ["/bin/bash", "-c", "echo", "bound PVCs"]
    status = _vmi_status(cluster)
    assert status["phase"] == "Pending"
    assert _condition(status, "Provisioning") == {"type": "Provisioning", "status": "True"}

    # The scheduler binds the claim through the temporary pod; CDI populates it.
    bind_pod(cluster, pod_name(temporary))
    start_pod(cluster, pod_name(temporary))
    _play_cdi(cluster, "Succeeded", ready="True")
    controllers.run()
    assert "Deleted WaitForFirstConsumer temporary pod " + pod_name(temporary) in _events(
        controllers, "SuccessfulDelete"
    )
    [launcher] = cluster.api.find(PODS, NAMESPACE)
    assert "kubevirt.io/ephemeral-provisioning" not in launcher["metadata"]["annotations"]


def test_a_vmi_is_queued_when_its_data_volume_changes() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster, cdi=True)
    _vmi_with_data_volume(cluster, controllers)
    _play_cdi(cluster, "ImportInProgress")
    controllers.run()
    _play_cdi(cluster, "Succeeded", ready="True")
    cluster.sync()
    assert f"{NAMESPACE}/testvmi" in controllers.queues["vmi"].keys


def test_a_data_volume_error_outranks_unschedulable_and_provisioning() -> None:
    vm = VirtualMachine.from_dict(_vm())
    vmi = VirtualMachineInstance.from_dict(
        {
            "metadata": {"name": "testvm"},
            "spec": {"domain": {"devices": {}}},
            "status": {
                "phase": "Scheduling",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            },
        }
    )
    now = datetime(2026, 1, 1, tzinfo=UTC)
    state = VMState(vm=vm, vmi=vmi, start_expected=False, stop_expected=False, now=now, provisioning=True)
    assert printable_status(state) == "ErrorUnschedulable"
    assert printable_status(replace(state, data_volume_error=True)) == "DataVolumeError"
    assert printable_status(replace(state, vmi=None)) == "Provisioning"
