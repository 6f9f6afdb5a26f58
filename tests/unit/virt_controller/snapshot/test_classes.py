"""Which VolumeSnapshotClass snapshots a claim (KubeVirt's getVolumeSnapshotClassName): the classes whose
driver is the StorageClass's provisioner; of several, the one carrying the default-class annotation."""

from __future__ import annotations

import pytest

from kubevirt.controller import Store
from kubevirt.virt_controller.watch.snapshot.classes import (
    SnapshotClassError,
    claim_storage_class,
    snapshot_class_for,
    volume_claim,
)

from .world import DRIVER, JSON, NS, STORAGE_CLASS, claim, snapshot_class, storage_class


def _storage_classes(*classes: JSON) -> Store[JSON]:
    store: Store[JSON] = Store()
    for item in classes:
        store.upsert(item)
    return store


KNOWN = _storage_classes(storage_class(), storage_class("other", provisioner="other.csi"))


def test_the_one_class_of_the_provisioners_driver_is_chosen() -> None:
    classes = [snapshot_class("foreign", driver="other.csi"), snapshot_class("mine")]
    assert snapshot_class_for(STORAGE_CLASS, KNOWN, classes) == "mine"


def test_of_several_the_one_with_the_default_annotation_is_chosen_whatever_its_value() -> None:
    classes = [snapshot_class("a"), snapshot_class("b", default="false"), snapshot_class("c", default="true")]
    # The annotation key is what counts (KubeVirt ignores its value): the first carrying it wins.
    assert snapshot_class_for(STORAGE_CLASS, KNOWN, classes) == "b"


def test_several_without_a_default_is_an_error_naming_the_storage_class() -> None:
    classes = [snapshot_class("a"), snapshot_class("b"), snapshot_class("x", driver="other.csi")]
    with pytest.raises(SnapshotClassError) as raised:
        snapshot_class_for(STORAGE_CLASS, KNOWN, classes)
    assert str(raised.value) == f"2 matching VolumeSnapshotClasses for {STORAGE_CLASS}"


def test_no_class_for_the_driver_is_no_class() -> None:
    assert snapshot_class_for(STORAGE_CLASS, KNOWN, [snapshot_class("x", driver="other.csi")]) == ""
    assert snapshot_class_for(STORAGE_CLASS, KNOWN, []) == ""


def test_an_unknown_or_empty_storage_class_has_no_class_and_no_error() -> None:
    classes = [snapshot_class("a"), snapshot_class("b")]  # would be ambiguous for a known class
    assert snapshot_class_for("missing", KNOWN, classes) == ""
    assert snapshot_class_for("", KNOWN, classes) == ""


def test_only_the_storage_class_provisioner_is_matched() -> None:
    classes = [snapshot_class("for-other", driver="other.csi"), snapshot_class("mine", driver=DRIVER)]
    assert snapshot_class_for("other", KNOWN, classes) == "for-other"


def test_a_claims_storage_class_comes_from_its_spec() -> None:
    pvcs: Store[JSON] = Store()
    pvcs.upsert(claim("with-class"))
    pvcs.upsert(claim("without-class", storage_class_name=None))
    assert claim_storage_class(pvcs, NS, "with-class") == STORAGE_CLASS
    assert claim_storage_class(pvcs, NS, "without-class") == ""
    with pytest.raises(SnapshotClassError, match=r"^PVC not found$"):
        claim_storage_class(pvcs, NS, "absent")


@pytest.mark.parametrize(
    ("volume", "expected"),
    [
        ({"name": "a", "persistentVolumeClaim": {"claimName": "pvc-a"}}, "pvc-a"),
        ({"name": "b", "dataVolume": {"name": "dv-b"}}, "dv-b"),
        ({"name": "c", "memoryDump": {"claimName": "dump-c"}}, "dump-c"),
        ({"name": "d", "containerDisk": {"image": "img"}}, ""),
        ({"name": "e", "cloudInitNoCloud": {"userData": "x"}}, ""),
    ],
)
def test_the_claim_behind_a_volume(volume: JSON, expected: str) -> None:
    assert volume_claim(volume) == expected
