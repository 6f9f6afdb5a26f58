"""The CSI snapshot kinds are watched only once their CRDs serve ``v1`` (KubeVirt starts its dynamic
VolumeSnapshot and VolumeSnapshotClass informers from CRD events the same way)."""

from __future__ import annotations

from typing import Any

from kubevirt.client.resources import VOLUME_SNAPSHOT_CLASSES, VOLUME_SNAPSHOTS, Resource
from kubevirt.controller import Informer, SharedInformerFactory
from kubevirt.virt_controller.watch.snapshot.crds import SnapshotCrdInformers, crd_name

from .world import JSON

VS_CRD = "volumesnapshots.snapshot.storage.k8s.io"
VSC_CRD = "volumesnapshotclasses.snapshot.storage.k8s.io"


class _Unreachable:
    """The factory is not started in these tests: its informers never list or watch."""

    def list_raw(self, resource: Resource, namespace: str | None = None, **options: Any) -> bytes:
        raise AssertionError("listed")

    def watch(self, resource: Resource, namespace: str | None = None, **options: Any) -> Any:
        raise AssertionError("watched")


def _crd(name: str, *versions: tuple[str, bool]) -> JSON:
    return {
        "metadata": {"name": name},
        "spec": {
            "versions": [{"name": version, "served": served, "storage": True} for version, served in versions]
        },
    }


def _crds() -> tuple[SnapshotCrdInformers, SharedInformerFactory, list[tuple[str, Informer[JSON]]]]:
    factory = SharedInformerFactory(_Unreachable(), resync_seconds=0)
    crds = SnapshotCrdInformers(factory)
    connected: list[tuple[str, Informer[JSON]]] = []
    crds.on_volume_snapshots(lambda informer: connected.append(("vs", informer)))
    crds.on_volume_snapshot_classes(lambda informer: connected.append(("vsc", informer)))
    return crds, factory, connected


def test_the_crd_names_are_kubernetes() -> None:
    assert crd_name(VOLUME_SNAPSHOTS) == VS_CRD
    assert crd_name(VOLUME_SNAPSHOT_CLASSES) == VSC_CRD


def test_nothing_is_watched_before_the_crds_exist() -> None:
    crds, _, connected = _crds()
    assert crds.volume_snapshots() is None
    assert crds.volume_snapshot_classes() is None
    assert connected == []


def test_a_served_v1_crd_starts_its_informer_and_connects_its_handlers() -> None:
    crds, factory, connected = _crds()
    crds.on_crd_add(_crd(VS_CRD, ("v1beta1", True), ("v1", True)))

    store = crds.volume_snapshots()
    assert store is not None
    assert connected == [("vs", factory.informer(VOLUME_SNAPSHOTS))]
    assert connected[0][1].store is store
    assert crds.volume_snapshot_classes() is None  # each kind on its own CRD

    crds.on_crd_add(_crd(VSC_CRD, ("v1", True)))
    assert crds.volume_snapshot_classes() is factory.informer(VOLUME_SNAPSHOT_CLASSES).store
    assert [kind for kind, _ in connected] == ["vs", "vsc"]


def test_a_crd_not_serving_v1_starts_nothing_until_it_does() -> None:
    crds, _, connected = _crds()
    only_beta = _crd(VS_CRD, ("v1beta1", True))
    not_served = _crd(VS_CRD, ("v1beta1", True), ("v1", False))
    crds.on_crd_add(only_beta)
    crds.on_crd_update(only_beta, not_served)
    assert crds.volume_snapshots() is None
    assert connected == []

    crds.on_crd_update(not_served, _crd(VS_CRD, ("v1", True)))
    assert crds.volume_snapshots() is not None
    assert len(connected) == 1


def test_an_informer_starts_once() -> None:
    crds, _, connected = _crds()
    served = _crd(VSC_CRD, ("v1", True))
    crds.on_crd_add(served)
    store = crds.volume_snapshot_classes()
    crds.on_crd_update(served, served)
    crds.on_crd_add(served)
    assert crds.volume_snapshot_classes() is store
    assert len(connected) == 1


def test_other_crds_are_ignored() -> None:
    crds, _, connected = _crds()
    crds.on_crd_add(_crd("volumesnapshotcontents.snapshot.storage.k8s.io", ("v1", True)))
    crds.on_crd_add(_crd("virtualmachinesnapshots.snapshot.kubevirt.io", ("v1beta1", True)))
    crds.on_crd_add({"metadata": {}})
    assert crds.volume_snapshots() is None
    assert crds.volume_snapshot_classes() is None
    assert connected == []
