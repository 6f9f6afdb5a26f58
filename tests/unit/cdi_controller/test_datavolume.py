"""The DataVolume controller: claim creation, phases per situation, conditions, events on phase change
only, progress, adoption and the refused sources."""

from __future__ import annotations

import contextlib

import pytest

from kubevirt.cdi_controller.render import ClaimNotValid
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS
from kubevirt.client.resources import CDI_CONFIGS, DATA_VOLUMES

from .harness import (
    Cluster,
    data_volume,
    running,
    set_claim_phase,
    set_pod_status,
    standard_cluster,
    terminated,
)

USE_POPULATOR = "cdi.kubevirt.io/storage.usePopulator"


def status(cluster: Cluster, name: str = "dv") -> dict[str, object]:
    return cluster.get(DATA_VOLUMES, name).get("status") or {}


def conditions(cluster: Cluster, name: str = "dv") -> dict[str, dict[str, str]]:
    return {c["type"]: c for c in status(cluster, name).get("conditions") or []}  # type: ignore[attr-defined]


def test_dv_gets_its_claim_and_the_legacy_path_annotation() -> None:
    cluster = standard_cluster()
    cluster.add(DATA_VOLUMES, data_volume())
    cluster.reconcile_dv("dv")
    dv = cluster.get(DATA_VOLUMES, "dv")
    assert dv["metadata"]["annotations"][USE_POPULATOR] == "false"
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    assert pvc["metadata"]["annotations"][USE_POPULATOR] == "false"
    assert pvc["spec"]["storageClassName"] == "local"
    assert pvc["metadata"]["ownerReferences"][0]["uid"] == dv["metadata"]["uid"]
    assert status(cluster)["claimName"] == "dv"


def test_claim_pending_on_a_wffc_class_waits_for_first_consumer() -> None:
    cluster = standard_cluster(wffc=True)
    cluster.add(DATA_VOLUMES, data_volume())
    cluster.settle("dv")
    set_claim_phase(cluster, "dv", "Pending")
    cluster.settle("dv")
    assert status(cluster)["phase"] == "WaitForFirstConsumer"
    assert conditions(cluster)["Bound"]["reason"] == "Pending"
    assert cluster.api.objects_of(PODS) == []  # the importer waits for the claim to bind


def test_immediate_binding_asked_on_a_wffc_class_does_not_wait_for_a_consumer() -> None:
    cluster = standard_cluster(wffc=True)
    immediate = {"cdi.kubevirt.io/storage.bind.immediate.requested": "true"}
    cluster.add(DATA_VOLUMES, data_volume(annotations=immediate))
    cluster.settle("dv")
    set_claim_phase(cluster, "dv", "Pending")
    cluster.settle("dv")
    assert status(cluster)["phase"] == "Pending"
    assert cluster.get(PODS, "importer-dv")  # the importer is the claim's first consumer


def test_claim_pending_on_an_immediate_class_is_pending() -> None:
    cluster = standard_cluster()
    cluster.add(DATA_VOLUMES, data_volume())
    cluster.settle("dv")
    set_claim_phase(cluster, "dv", "Pending")
    cluster.settle("dv")
    assert status(cluster)["phase"] == "Pending"


def bound_and_scheduled(cluster: Cluster) -> None:
    cluster.add(DATA_VOLUMES, data_volume())
    cluster.settle("dv")
    set_claim_phase(cluster, "dv", "Bound")
    cluster.settle("dv")


def test_import_phases_follow_the_importer_pod() -> None:
    cluster = standard_cluster()
    bound_and_scheduled(cluster)
    assert status(cluster)["phase"] == "ImportScheduled"
    pod = cluster.get(PODS, "importer-dv")
    owner_uid = cluster.get(DATA_VOLUMES, "dv")["metadata"]["uid"]
    cluster.metrics["https://10.0.0.7:8443/metrics"] = (
        f'kubevirt_cdi_import_progress_total{{ownerUID="{owner_uid}"}} 45.678\n'
    )
    set_pod_status(cluster, pod["metadata"]["name"], running())
    cluster.settle("dv")
    assert status(cluster)["phase"] == "ImportInProgress"
    assert status(cluster)["progress"] == "45.68%"
    assert cluster.reconcile_dv("dv") == 2.0  # progress is polled every 2 s while running
    running_condition = conditions(cluster)["Running"]
    assert running_condition["status"] == "True"
    assert conditions(cluster)["Ready"] == {
        **conditions(cluster)["Ready"],
        "status": "False",
        "reason": "TransferRunning",
    }
    set_pod_status(cluster, "importer-dv", terminated(0, '{"message":"Import Complete"}'))
    cluster.settle("dv")
    final = status(cluster)
    assert final["phase"] == "Succeeded"
    assert final["progress"] == "100.0%"
    assert conditions(cluster)["Ready"]["status"] == "True"
    assert cluster.reconcile_dv("dv") is None
    normal = [(r, m) for k, r, m in cluster.events.seen if k == "Normal"]
    # As in CDI, the scheduled phase comes with the pod's name, before the pod reports a phase: no event.
    assert "ImportScheduled" not in [reason for reason, _ in normal]
    assert ("ImportInProgress", "Import into dv in progress") in normal
    assert ("ImportSucceeded", "Successfully imported into PVC dv") in normal
    # Each phase event once: settling again changes nothing.
    before = list(cluster.events.seen)
    cluster.settle("dv")
    assert cluster.events.seen == before


def test_importer_failure_keeps_the_phase_and_warns_with_the_message() -> None:
    cluster = standard_cluster()
    bound_and_scheduled(cluster)
    set_pod_status(cluster, "importer-dv", running())
    cluster.settle("dv")
    failed = terminated(1, "Unable to connect to http data source: boom", phase="Running", reason="Error")
    failed["containerStatuses"][0]["restartCount"] = 2
    set_pod_status(cluster, "importer-dv", failed)
    cluster.settle("dv")
    current = status(cluster)
    assert current["phase"] == "ImportInProgress"
    assert current["restartCount"] == 2
    assert conditions(cluster)["Running"]["reason"] == "Error"
    assert ("Error", "Unable to connect to http data source: boom") in cluster.warnings()
    assert ("ErrImportFailed", "Unable to connect to http data source: boom") in cluster.warnings()


def test_invalid_claim_leaves_phase_unset_with_bound_reason() -> None:
    cluster = standard_cluster()
    cluster.add(DATA_VOLUMES, data_volume(storage={"resources": {"requests": {"storage": "1Ki"}}}))
    with pytest.raises(ClaimNotValid, match="at least 1MiB"):  # retried with backoff, as CDI does
        cluster.reconcile_dv("dv")
    bound = conditions(cluster)["Bound"]
    assert bound["reason"] == "ErrClaimNotValid"
    assert bound["message"] == "PVC Spec is not valid - storage size should be at least 1MiB"
    assert status(cluster).get("phase", "") == ""
    assert cluster.api.objects_of(PERSISTENT_VOLUME_CLAIMS) == []


def test_heartbeat_moves_only_on_change() -> None:
    cluster = standard_cluster()
    cluster.add(DATA_VOLUMES, data_volume())
    cluster.settle("dv")
    first = conditions(cluster)["Bound"]
    cluster.clock.advance()
    cluster.settle("dv")
    assert conditions(cluster)["Bound"] == first
    set_claim_phase(cluster, "dv", "Bound")
    cluster.clock.advance()
    cluster.settle("dv")
    bound = conditions(cluster)["Bound"]
    assert bound["status"] == "True"
    assert bound["lastTransitionTime"] == bound["lastHeartbeatTime"]
    assert bound["lastTransitionTime"] != first["lastTransitionTime"]


def test_foreign_claim_is_refused_unless_adoption_is_allowed() -> None:
    cluster = standard_cluster()
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "dv", "namespace": "default"},
        "spec": {"resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound"},
    }
    cluster.add(PERSISTENT_VOLUME_CLAIMS, claim)
    cluster.add(DATA_VOLUMES, data_volume())
    with contextlib.suppress(Exception):
        cluster.reconcile_dv("dv")
    assert (
        "ErrResourceExists",
        'Resource "dv" already exists and is not managed by DataVolume',
    ) in cluster.warnings()
    adopting = standard_cluster()
    adopting.add(PERSISTENT_VOLUME_CLAIMS, claim)
    adopting.add(DATA_VOLUMES, data_volume(annotations={"cdi.kubevirt.io/allowClaimAdoption": "true"}))
    adopting.settle("dv")
    assert status(adopting)["phase"] == "Succeeded"
    owner = adopting.get(PERSISTENT_VOLUME_CLAIMS, "dv")["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "DataVolume"
    assert owner["controller"] is True


def test_populated_claim_marks_the_dv_prepopulated_and_succeeded() -> None:
    cluster = standard_cluster()
    claim = {
        "metadata": {
            "name": "dv",
            "namespace": "default",
            "annotations": {"cdi.kubevirt.io/storage.populatedFor": "dv"},
        },
        "spec": {},
        "status": {"phase": "Bound"},
    }
    cluster.add(PERSISTENT_VOLUME_CLAIMS, claim)
    cluster.add(DATA_VOLUMES, data_volume())
    cluster.settle("dv")
    assert (
        cluster.get(DATA_VOLUMES, "dv")["metadata"]["annotations"]["cdi.kubevirt.io/storage.prePopulated"]
        == "dv"
    )
    assert status(cluster)["phase"] == "Succeeded"


def test_unsupported_sources_stay_pending_with_a_warning() -> None:
    cluster = standard_cluster()
    cluster.add(DATA_VOLUMES, data_volume(source={"snapshot": {"namespace": "default", "name": "src"}}))
    cluster.settle("dv")
    cluster.settle("dv")
    assert status(cluster)["phase"] == "Pending"
    assert cluster.warnings() == [
        ("UnsupportedSource", "DataVolume source snapshot is not supported by this DataVolume importer yet")
    ]
    assert cluster.api.objects_of(PERSISTENT_VOLUME_CLAIMS) == []


def test_lost_claim_fails_the_dv() -> None:
    cluster = standard_cluster()
    cluster.add(DATA_VOLUMES, data_volume())
    cluster.settle("dv")
    set_claim_phase(cluster, "dv", "Lost")
    cluster.settle("dv")
    assert status(cluster)["phase"] == "Failed"
    assert ("ErrClaimLost", "PVC dv lost") in cluster.warnings()


def test_claims_wait_for_the_cdiconfig_overhead() -> None:
    cluster = standard_cluster()
    cluster.api.delete(CDI_CONFIGS, None, "config")
    cluster.add(DATA_VOLUMES, data_volume())
    assert cluster.reconcile_dv("dv") == 1.0
    assert cluster.api.objects_of(PERSISTENT_VOLUME_CLAIMS) == []
    assert status(cluster)["phase"] == "Pending"
