"""CDI's kinds are watched only once their CRDs serve ``v1beta1``, and a DataVolume cache counts only
once it has listed (KubeVirt runs a stand-in DataVolume informer without CDI)."""

from __future__ import annotations

import json
import threading
from typing import Any

from kubevirt.client.resources import CDI_CONFIGS, CDIS, DATA_VOLUMES, Resource
from kubevirt.controller import Informer, SharedInformerFactory
from kubevirt.virt_controller.watch.cdiinformers import CdiInformers

from .fakes import JSON

DV_CRD = "datavolumes.cdi.kubevirt.io"


class _Client:
    """Lists one DataVolume and CDI's config; each watch stays open until closed."""

    def __init__(self) -> None:
        self.listed: list[str] = []

    def list_raw(self, resource: Resource, namespace: str | None = None, **options: Any) -> bytes:
        self.listed.append(resource.plural)
        items = {
            "datavolumes": [{"metadata": {"name": "disk", "namespace": "default"}}],
            "cdiconfigs": [{"metadata": {"name": "config"}, "status": {}}],
            "cdis": [{"metadata": {"name": "cdi"}}],
        }[resource.plural]
        return json.dumps({"items": items, "metadata": {"resourceVersion": "1"}}).encode()

    def watch(self, resource: Resource, namespace: str | None = None, **options: Any) -> Any:
        return _OpenWatch()


class _OpenWatch:
    def __init__(self) -> None:
        self._closed = threading.Event()

    def __iter__(self) -> Any:
        self._closed.wait()
        return iter(())

    def close(self) -> None:
        self._closed.set()


def _crd(name: str, version: str = "v1beta1", served: bool = True) -> JSON:
    return {"metadata": {"name": name}, "spec": {"versions": [{"name": version, "served": served}]}}


def _informers() -> tuple[CdiInformers, SharedInformerFactory, _Client, list[Informer[JSON]]]:
    client = _Client()
    factory = SharedInformerFactory(client, resync_seconds=0)
    cdi = CdiInformers(factory)
    connected: list[Informer[JSON]] = []
    cdi.on_data_volumes(connected.append)
    return cdi, factory, client, connected


def test_without_cdi_nothing_is_listed_or_watched() -> None:
    cdi, factory, client, connected = _informers()
    factory.start()
    try:
        cdi.on_crd_add(_crd("virtualmachines.kubevirt.io", "v1"))
        cdi.on_crd_add(_crd(DV_CRD, served=False))
        assert cdi.data_volumes() is None
        assert cdi.cdis() == []
        assert cdi.cdi_config("config") is None
        assert connected == []
        assert client.listed == []
    finally:
        factory.stop()


def test_a_served_crd_starts_its_informer_whose_cache_counts_once_listed() -> None:
    cdi, factory, _, connected = _informers()
    cdi.on_crd_add(_crd(DV_CRD))
    informer = factory.informer(DATA_VOLUMES)
    assert connected == [informer]
    assert cdi.data_volumes() is None  # not listed yet: an empty cache would say "none exist"
    factory.start()
    try:
        assert informer.wait_for_sync(5)
        store = cdi.data_volumes()
        assert store is not None
        assert store.get_by_key("default/disk") is not None
    finally:
        factory.stop()


def test_cdi_and_its_config_come_from_their_own_crds() -> None:
    cdi, factory, _, connected = _informers()
    factory.start()
    try:
        cdi.on_crd_add(_crd(f"{CDIS.plural}.{CDIS.group}"))
        cdi.on_crd_update({}, _crd(f"{CDI_CONFIGS.plural}.{CDI_CONFIGS.group}"))
        assert factory.informer(CDIS).wait_for_sync(5)
        assert factory.informer(CDI_CONFIGS).wait_for_sync(5)
        assert [c["metadata"]["name"] for c in cdi.cdis()] == ["cdi"]
        config = cdi.cdi_config("config")
        assert config is not None
        assert config["status"] == {}
        assert connected == []  # the DataVolume kind is not served
    finally:
        factory.stop()
