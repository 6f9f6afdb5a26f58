"""The objects ``virtctl image-upload`` writes, field for field as KubeVirt's virtctl writes them."""

from __future__ import annotations

import pytest

from kubevirt.virtctl.imageupload.flags import UploadError, UploadInfo, parse_args
from kubevirt.virtctl.imageupload.objects import (
    data_source_body,
    data_source_patch,
    data_volume_body,
    pvc_body,
    size_quantity,
    storage_spec,
    token_request_body,
)

NAME = "test-volume"
NAMESPACE = "default"
BIND = "cdi.kubevirt.io/storage.bind.immediate.requested"
INSTANCETYPE_LABELS = {
    "instancetype.kubevirt.io/default-instancetype": "instancetype",
    "instancetype.kubevirt.io/default-instancetype-kind": "VirtualMachineInstancetype",
    "instancetype.kubevirt.io/default-preference": "preference",
    "instancetype.kubevirt.io/default-preference-kind": "VirtualMachinePreference",
}


def parsed(kind: str, **flags: object) -> UploadInfo:
    info = UploadInfo(namespace=NAMESPACE)
    for key, value in {"image_path": "/img", **flags}.items():
        setattr(info, key, value)
    parse_args(info, (kind, NAME))
    return info


def with_instancetype(**flags: object) -> dict[str, object]:
    return {
        "default_instancetype": "instancetype",
        "default_instancetype_kind": "VirtualMachineInstancetype",
        "default_preference": "preference",
        "default_preference_kind": "VirtualMachinePreference",
        **flags,
    }


def test_a_plain_data_volume() -> None:
    info = parsed("dv", size="500Mi")
    assert data_volume_body(info, storage_spec(info)) == {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            "source": {"upload": {}},
            "contentType": "kubevirt",
            "storage": {"resources": {"requests": {"storage": "500Mi"}}},
        },
    }


def test_a_data_volume_with_every_flag() -> None:
    info = parsed(
        "dv",
        **with_instancetype(
            size="1.5Gi",
            storage_class="fast",
            access_mode="ReadWriteMany",
            block_volume=True,
            force_bind=True,
        ),
    )
    assert data_volume_body(info, storage_spec(info)) == {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "annotations": {BIND: ""},
            "labels": INSTANCETYPE_LABELS,
        },
        "spec": {
            "source": {"upload": {}},
            "contentType": "kubevirt",
            "storage": {
                "resources": {"requests": {"storage": "1536Mi"}},  # Go's canonical form
                "storageClassName": "fast",
                "accessModes": ["ReadWriteMany"],
                "volumeMode": "Block",
            },
        },
    }


def test_an_archive_data_volume_is_filesystem_when_asked() -> None:
    info = parsed("dv", size="500Mi", archive_path="/a.tar", image_path="", volume_mode="filesystem")
    body = data_volume_body(info, storage_spec(info))
    assert body["spec"]["contentType"] == "archive"
    assert body["spec"]["storage"]["volumeMode"] == "Filesystem"


def test_a_plain_pvc() -> None:
    info = parsed("pvc", size="500Mi")
    assert pvc_body(info, size_quantity(info)) == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"cdi.kubevirt.io/applyStorageProfile": "true"},
            "annotations": {
                "cdi.kubevirt.io/storage.upload.target": "",
                "cdi.kubevirt.io/storage.contentType": "kubevirt",
            },
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "500Mi"}}},
    }


def test_a_pvc_with_every_flag() -> None:
    info = parsed(
        "pvc",
        **with_instancetype(
            size="10G",
            storage_class="fast",
            access_mode="ReadWriteMany",
            volume_mode="block",
            force_bind=True,
        ),
    )
    body = pvc_body(info, size_quantity(info))
    assert body["metadata"]["labels"] == {
        "cdi.kubevirt.io/applyStorageProfile": "true",
        **INSTANCETYPE_LABELS,
    }
    assert body["metadata"]["annotations"] == {
        "cdi.kubevirt.io/storage.upload.target": "",
        "cdi.kubevirt.io/storage.contentType": "kubevirt",
        BIND: "",
    }
    assert body["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "10G"}},
        "storageClassName": "fast",
        "volumeMode": "Block",
    }


def test_an_archive_pvc() -> None:
    info = parsed("pvc", size="1Gi", archive_path="/a.tar", image_path="", volume_mode="filesystem")
    body = pvc_body(info, size_quantity(info))
    assert body["metadata"]["annotations"]["cdi.kubevirt.io/storage.contentType"] == "archive"
    assert body["spec"]["volumeMode"] == "Filesystem"


def test_a_bad_size_and_read_only_are_refused() -> None:
    with pytest.raises(UploadError) as raised:
        size_quantity(parsed("dv", size="500Zb"))
    assert str(raised.value) == (
        "validation failed for size=500Zb: quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    with pytest.raises(UploadError) as raised:
        storage_spec(parsed("dv", size="1Gi", access_mode="ReadOnlyMany"))
    assert str(raised.value) == (
        "cannot upload to a readonly volume, use either ReadWriteOnce or ReadWriteMany if supported"
    )


def test_the_token_request() -> None:
    assert token_request_body(parsed("dv")) == {
        "apiVersion": "upload.cdi.kubevirt.io/v1beta1",
        "kind": "UploadTokenRequest",
        "metadata": {"name": "token-for-virtctl"},
        "spec": {"pvcName": NAME},
    }


def test_the_data_source_and_its_patch() -> None:
    info = parsed("dv", **with_instancetype())
    assert data_source_body(info) == {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataSource",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": INSTANCETYPE_LABELS},
        "spec": {"source": {"pvc": {"name": NAME, "namespace": NAMESPACE}}},
    }
    existing = {"metadata": {"name": NAME, "labels": {"keep": "me"}}}
    assert data_source_patch(info, existing) == [
        {"op": "replace", "path": "/metadata/labels", "value": {"keep": "me", **INSTANCETYPE_LABELS}},
        {"op": "replace", "path": "/spec/source/pvc", "value": {"name": NAME, "namespace": NAMESPACE}},
    ]
    assert data_source_patch(parsed("dv"), {"metadata": {}})[0]["value"] == {}
