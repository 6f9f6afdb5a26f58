"""A DataVolume's claim: spec rendering (StorageProfile defaults, default class, size and overhead, CDI's
error messages) and the claim's labels, annotations and owner."""

from __future__ import annotations

import pytest

from kubevirt.cdi.resources import STORAGE_PROFILES
from kubevirt.cdi_controller.render import ClaimNotValid, new_claim, render_claim_spec, source_annotations
from kubevirt.client.resources import STORAGE_CLASSES

from .harness import Cluster, cdi_config, data_volume, profile, standard_cluster, storage_class

GI = 1 << 30


def render(cluster: Cluster, **storage: object) -> dict[str, object]:
    dv = data_volume(storage={"resources": {"requests": {"storage": "1Gi"}}, **storage})
    return render_claim_spec(dv, cluster.caches, cluster.events)


def test_storage_takes_modes_from_the_profile_and_the_default_class() -> None:
    spec = render(standard_cluster())
    assert spec["storageClassName"] == "local"
    assert spec["accessModes"] == ["ReadWriteOnce"]
    assert spec["volumeMode"] == "Filesystem"


def test_filesystem_size_is_inflated_by_the_global_overhead() -> None:
    spec = render(standard_cluster())
    # ceil(1 GiB * 1.06)
    assert spec["resources"] == {"requests": {"storage": "1138166334"}}


def test_per_class_overhead_wins_over_global() -> None:
    cluster = Cluster()
    cluster.add(STORAGE_CLASSES, storage_class())
    cluster.add(STORAGE_PROFILES, profile())
    from kubevirt.client.resources import CDI_CONFIGS

    cluster.add(CDI_CONFIGS, cdi_config("0.06", {"local": "0.1"}))
    spec = render(cluster)
    assert spec["resources"]["requests"]["storage"] == str(int(GI * 1.1) + 1)  # type: ignore[index]


def test_block_size_is_not_inflated() -> None:
    spec = render(standard_cluster(), volumeMode="Block", accessModes=["ReadWriteOnce"])
    assert spec["resources"] == {"requests": {"storage": str(GI)}}


def test_virtualization_default_class_is_preferred_for_kubevirt_content() -> None:
    cluster = standard_cluster()
    virt = storage_class("virt", default=False)
    virt["metadata"]["annotations"] = {"storageclass.kubevirt.io/is-default-virt-class": "true"}
    cluster.add(STORAGE_CLASSES, virt)
    cluster.add(STORAGE_PROFILES, profile("virt"))
    assert render(cluster)["storageClassName"] == "virt"


def test_access_modes_matching_the_volume_mode() -> None:
    cluster = standard_cluster()
    sets = [
        {"accessModes": ["ReadWriteMany"], "volumeMode": "Block"},
        {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"},
    ]
    cluster.add(STORAGE_PROFILES, {**profile("other", sets)})
    cluster.add(STORAGE_CLASSES, storage_class("other", default=False))
    spec = render(cluster, storageClassName="other", volumeMode="Block")
    assert spec["accessModes"] == ["ReadWriteMany"]
    spec = render(cluster, storageClassName="other", accessModes=["ReadWriteOnce"])
    assert spec["volumeMode"] == "Filesystem"


def test_minimum_supported_size_of_the_profile_raises_the_request() -> None:
    cluster = standard_cluster()
    small = profile()
    small["metadata"]["annotations"] = {"cdi.kubevirt.io/minimumSupportedPvcSize": "4Gi"}
    cluster.api.objects[("storageprofiles", None, "local")] = {
        **small,
        "metadata": {**small["metadata"], "resourceVersion": "1"},
    }
    cluster.sync()
    assert render(cluster)["resources"] == {"requests": {"storage": str(4 * GI)}}


@pytest.mark.parametrize(
    ("storage", "message", "event"),
    [
        ({"storageClassName": "empty"}, "no accessMode specified in StorageProfile empty", True),
        ({"volumeMode": "Block"}, "no matching accessMode specified in StorageProfile local", True),
        (
            {"resources": {}, "accessModes": ["ReadWriteOnce"]},
            "PVC Spec is not valid - missing storage size",
            False,
        ),
        (
            {"resources": {"requests": {"storage": "1Ki"}}, "accessModes": ["ReadWriteOnce"]},
            "PVC Spec is not valid - storage size should be at least 1MiB",
            False,
        ),
    ],
)
def test_invalid_claims_report_cdis_messages(storage: dict[str, object], message: str, event: bool) -> None:
    cluster = standard_cluster()
    cluster.add(STORAGE_PROFILES, profile("empty", []))
    cluster.add(STORAGE_CLASSES, storage_class("empty", default=False))
    with pytest.raises(ClaimNotValid, match=message) as raised:
        render_claim_spec(
            data_volume(storage={"resources": {"requests": {"storage": "1Gi"}}, **storage}),
            cluster.caches,
            cluster.events,
        )
    assert raised.value.retry
    warnings = cluster.warnings()
    if event:
        assert len(warnings) == 1
        assert warnings[0][0] == "ErrClaimNotValid"
        assert "cannot get access mode from StorageProfile" in warnings[0][1]
    else:
        assert warnings == []


def test_no_storage_class_is_a_claim_error_that_waits_for_a_class() -> None:
    cluster = Cluster()
    with pytest.raises(ClaimNotValid) as raised:
        render_claim_spec(data_volume(), cluster.caches, cluster.events)
    assert str(raised.value) == "PVC spec is missing accessMode and no storageClass to choose profile"
    assert not raised.value.retry
    assert cluster.warnings() == [("ErrClaimNotValid", str(raised.value))]


def test_archive_content_cannot_be_block() -> None:
    cluster = standard_cluster()
    dv = data_volume(storage={"volumeMode": "Block", "resources": {"requests": {"storage": "1Gi"}}})
    dv["spec"]["contentType"] = "archive"
    with pytest.raises(ClaimNotValid, match="ContentType Archive cannot have block volumeMode"):
        render_claim_spec(dv, cluster.caches, cluster.events)


def test_pvc_spec_is_copied_as_is() -> None:
    cluster = standard_cluster()
    dv = data_volume()
    del dv["spec"]["storage"]
    dv["spec"]["pvc"] = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}
    assert render_claim_spec(dv, cluster.caches, cluster.events) == dv["spec"]["pvc"]


def test_new_claim_carries_cdis_labels_annotations_and_owner() -> None:
    cluster = standard_cluster()
    dv = data_volume(labels={"team": "a"}, annotations={"user/note": "x"}, uid="dv-uid")
    dv["spec"]["source"] = {
        "http": {
            "url": "https://h/d.img",
            "secretRef": "creds",
            "certConfigMap": "ca",
            "extraHeaders": ["A: b"],
            "secretExtraHeaders": ["hdr"],
        }
    }
    claim = new_claim(dv, {"volumeMode": "Filesystem"}, cluster.caches)
    meta = claim["metadata"]
    assert meta["name"] == "dv"
    assert meta["namespace"] == "default"
    assert meta["labels"] == {
        "app": "containerized-data-importer",
        "alerts.k8s.io/KubePersistentVolumeFillingUp": "disabled",
        "team": "a",
        "app.kubernetes.io/managed-by": "cdi-controller",
        "app.kubernetes.io/component": "storage",
    }
    assert meta["annotations"] == {
        "user/note": "x",
        "cdi.kubevirt.io/storage.pod.restarts": "0",
        "cdi.kubevirt.io/storage.contentType": "kubevirt",
        "cdi.kubevirt.io/storage.preallocation.requested": "false",
        "cdi.kubevirt.io/createdForDataVolume": "dv-uid",
        "cdi.kubevirt.io/storage.import.endpoint": "https://h/d.img",
        "cdi.kubevirt.io/storage.import.source": "http",
        "cdi.kubevirt.io/storage.import.secretName": "creds",
        "cdi.kubevirt.io/storage.import.certConfigMap": "ca",
        "cdi.kubevirt.io/storage.import.extraHeaders.0": "A: b",
        "cdi.kubevirt.io/storage.import.secretExtraHeaders.0": "hdr",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "cdi.kubevirt.io/v1beta1",
            "kind": "DataVolume",
            "name": "dv",
            "uid": "dv-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_registry_and_blank_source_annotations() -> None:
    registry = data_volume(
        source={
            "registry": {"url": "docker://r/i:t", "pullMethod": "node", "platform": {"architecture": "arm64"}}
        }
    )
    assert source_annotations(registry) == {
        "cdi.kubevirt.io/storage.import.source": "registry",
        "cdi.kubevirt.io/storage.import.registryImportMethod": "node",
        "cdi.kubevirt.io/storage.import.endpoint": "docker://r/i:t",
        "cdi.kubevirt.io/storage.import.registryImageArchitecture": "arm64",
    }
    blank = data_volume(source={"blank": {}})
    assert source_annotations(blank) == {"cdi.kubevirt.io/storage.import.source": "none"}
